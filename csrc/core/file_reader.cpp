// SPDX-License-Identifier: BSD-3-Clause
#include "core/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"

namespace spdl_torch::core {
namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err) {
  throw IOError(what + " '" + path + "': " + std::strerror(err), err);
}

}  // namespace

FileReader::FileReader(const std::string& path) : path_(path) {
  if (path.find('\0') != std::string::npos) throw IOError("cannot open a path with an embedded NUL byte", EINVAL);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    if (S_ISDIR(st.st_mode)) throw IOError("cannot read '" + path + "': is a directory", EISDIR);
    throw IOError("cannot read '" + path + "': not a regular file (a device, FIFO or socket)", EINVAL);
  }
  size_ = st.st_size;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::check_size(int64_t max_bytes) const {
  if (max_bytes > 0 && size_ > max_bytes) {
    throw IOError("cannot read '" + path_ + "': its " + std::to_string(size_) + " bytes exceed the limit of " +
                      std::to_string(max_bytes) + " bytes (max_bytes)",
                  EFBIG);
  }
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
