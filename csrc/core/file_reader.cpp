#include "file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace spdl_torch::core {
namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err) {
  throw IOError(what + " '" + path + "': " + std::strerror(err), err);
}

}  // namespace

FileReader::FileReader(const std::string& path) : path_(path) {
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_errno("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw_errno("cannot stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw IOError("cannot read '" + path + "': not a regular file", EISDIR);
  }
  size_ = st.st_size;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::read_all(uint8_t* dst, int64_t n) const {
  int64_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, dst + done, static_cast<size_t>(n - done), done);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path_, errno);
    }
    if (got == 0) {
      throw IOError("cannot read '" + path_ + "': expected " + std::to_string(n) + " bytes, the file ended after " +
                    std::to_string(done) + " (it shrank while being read)", EIO);
    }
    done += got;
  }
}

}  // namespace spdl_torch::core
