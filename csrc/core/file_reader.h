// SPDX-License-Identifier: BSD-3-Clause
// Reading whole files into caller-provided memory, without any Python involvement.
#pragma once

#include <cstdint>
#include <string>

namespace spdl_torch::core {

// An open, read-only file; the descriptor is closed by the destructor.
class FileReader {
 public:
  explicit FileReader(const std::string& path);  // throws IOError naming the path and strerror
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Size in bytes when opened (regular files only).
  int64_t size() const { return size_; }
  // Throws IOError (EFBIG) when max_bytes > 0 and the file is larger; max_bytes <= 0: no limit.
  void check_size(int64_t max_bytes) const;
  // Reads exactly n bytes from the start into dst; throws IOError if the file is shorter now.
  void read_all(uint8_t* dst, int64_t n) const;

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace spdl_torch::core
