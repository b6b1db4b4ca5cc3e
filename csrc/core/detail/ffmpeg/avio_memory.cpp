// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/avio_memory.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cstring>
#include <new>

namespace spdl_torch::core::detail {
namespace {
constexpr int kBufferBytes = 64 * 1024;
}

MemoryIO::MemoryIO(const uint8_t* data, size_t size) : data_(data), size_(size) {
  auto* buffer = static_cast<uint8_t*>(av_malloc(kBufferBytes));
  if (buffer == nullptr) throw std::bad_alloc();
  ctx_ = avio_alloc_context(buffer, kBufferBytes, 0, this, &MemoryIO::read, nullptr, &MemoryIO::seek);
  if (ctx_ == nullptr) {
    av_free(buffer);
    throw std::bad_alloc();
  }
}

MemoryIO::~MemoryIO() {
  if (ctx_ != nullptr) av_freep(&ctx_->buffer);  // FFmpeg may have replaced the buffer: free its current one
  avio_context_free(&ctx_);
}

int MemoryIO::read(void* opaque, uint8_t* buf, int buf_size) {
  auto* self = static_cast<MemoryIO*>(opaque);
  if (self->pos_ >= self->size_) return AVERROR_EOF;
  const size_t n = std::min(static_cast<size_t>(buf_size), self->size_ - self->pos_);
  std::memcpy(buf, self->data_ + self->pos_, n);
  self->pos_ += n;
  return static_cast<int>(n);
}

int64_t MemoryIO::seek(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<MemoryIO*>(opaque);
  const auto size = static_cast<int64_t>(self->size_);
  int64_t target;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = static_cast<int64_t>(self->pos_) + offset; break;
    case SEEK_END: target = size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (target < 0 || target > size) return AVERROR(EINVAL);
  self->pos_ = static_cast<size_t>(target);
  return target;
}

}  // namespace spdl_torch::core::detail
