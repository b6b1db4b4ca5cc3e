// SPDX-License-Identifier: BSD-3-Clause
// Random access to an input's bytes, a regular file (pread on an owned descriptor) or the caller's memory, for
// the readers that parse containers themselves (the native WAV reader, the FLAC frame search). Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/media_source.h"

namespace spdl_torch::core::detail {

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  virtual int64_t size() const = 0;
  // Reads up to n bytes at `offset` into `out`; returns the bytes read (fewer at the end). IOError on a read error.
  virtual size_t read(int64_t offset, uint8_t* out, size_t n) = 0;
};

class MemoryBytes : public ByteReader {
 public:
  MemoryBytes(const uint8_t* data, size_t size);
  int64_t size() const override { return int64_t(size_); }
  size_t read(int64_t offset, uint8_t* out, size_t n) override;

 private:
  const uint8_t* data_;
  size_t size_;
};

// An opened regular file, or nullptr when it cannot be opened or is not a regular file (the caller then leaves
// the input to FFmpeg, which names the error).
std::unique_ptr<ByteReader> open_file_bytes(const std::string& path);
// The source's bytes: its memory, or open_file_bytes(path).
std::unique_ptr<ByteReader> open_bytes(const MediaSource& source);

}  // namespace spdl_torch::core::detail
