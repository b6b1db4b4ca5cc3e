// SPDX-License-Identifier: BSD-3-Clause
// A read-only, seekable AVIOContext over bytes the caller owns (zero copy of the input; FFmpeg reads through
// its own small buffer). Internal header.
#pragma once

extern "C" {
#include <libavformat/avio.h>
}

#include <cstddef>
#include <cstdint>
#include <memory>

namespace spdl_torch::core::detail {

class MemoryIO {
 public:
  // Throws std::bad_alloc when FFmpeg cannot allocate the context.
  MemoryIO(const uint8_t* data, size_t size);
  ~MemoryIO();
  MemoryIO(const MemoryIO&) = delete;
  MemoryIO& operator=(const MemoryIO&) = delete;

  AVIOContext* context() const { return ctx_; }

 private:
  static int read(void* opaque, uint8_t* buf, int buf_size);
  static int64_t seek(void* opaque, int64_t offset, int whence);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  AVIOContext* ctx_ = nullptr;  // owns its buffer (freed with it)
};

}  // namespace spdl_torch::core::detail
