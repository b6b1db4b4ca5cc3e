// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/io/byte_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core::detail {

MemoryBytes::MemoryBytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}

size_t MemoryBytes::read(int64_t offset, uint8_t* out, size_t n) {
  if (offset < 0 || uint64_t(offset) >= size_) return 0;
  n = std::min(n, size_ - size_t(offset));
  std::memcpy(out, data_ + offset, n);
  return n;
}

namespace {

class FileBytes : public ByteReader {
 public:
  FileBytes(int fd, int64_t size) : fd_(fd), size_(size) {}
  ~FileBytes() override { ::close(fd_); }
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  int64_t size() const override { return size_; }
  size_t read(int64_t offset, uint8_t* out, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out + done, n - done, off_t(offset + int64_t(done)));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw IOError(std::string("cannot read the file: ") + std::strerror(errno), errno);
      if (got == 0) break;
      done += size_t(got);
    }
    return done;
  }

 private:
  int fd_;
  int64_t size_;
};

}  // namespace

std::unique_ptr<ByteReader> open_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<FileBytes>(fd, int64_t(st.st_size));
}

std::unique_ptr<ByteReader> open_bytes(const MediaSource& source) {
  if (source.in_memory()) return std::make_unique<MemoryBytes>(source.data, source.size);
  return open_file_bytes(source.path);
}

}  // namespace spdl_torch::core::detail
