// SPDX-License-Identifier: BSD-3-Clause
// The per-thread scratch buffers of the augmentation kernels (an image's copy, a mix's sum): kept from one call to
// the next, so that a batch's samples cost no allocation, and released when a use leaves one above kKeepBytes.
#pragma once

#include <cstddef>
#include <vector>

namespace spdl_torch::core::augment {

constexpr size_t kKeepBytes = size_t(16) << 20;  // a larger buffer is released after its use

// This thread's buffer of elements T for one purpose (Purpose: a tag type, e.g. `struct AffineSource`), held from
// construction to destruction, which releases it when it holds more than kKeepBytes. Two holders of one purpose
// must not be alive on one thread at once (they would share the buffer).
template <typename T, typename Purpose>
class ScratchBuffer {
 public:
  ScratchBuffer() : buffer_(storage()) {}
  ~ScratchBuffer() {
    if (buffer_.capacity() * sizeof(T) > kKeepBytes) std::vector<T>().swap(buffer_);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  std::vector<T>& operator*() { return buffer_; }
  std::vector<T>* operator->() { return &buffer_; }
  const std::vector<T>& operator*() const { return buffer_; }
  const std::vector<T>* operator->() const { return &buffer_; }

 private:
  static std::vector<T>& storage() {
    thread_local std::vector<T> buffer;
    return buffer;
  }
  std::vector<T>& buffer_;
};

}  // namespace spdl_torch::core::augment
