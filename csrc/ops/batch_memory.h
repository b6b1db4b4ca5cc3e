// SPDX-License-Identifier: BSD-3-Clause
// Output memory of non-pinned batches made by decode_images: mmap-backed buffers that go back to the OS
// when freed, with a small capped pool that recycles recently freed ones (see batch_memory.cpp for why).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace spdl_torch::ops {

// An uninitialized CPU tensor of `sizes` whose storage comes from the batch memory pool (memory of at
// least kMinPooledBytes) or from torch's CPU allocator (smaller ones). Like at::empty.
at::Tensor empty_batch(at::IntArrayRef sizes, at::ScalarType dtype, at::MemoryFormat format);

// Snapshot of the pool's counters (bytes are mapped bytes: the request rounded up to whole pages).
struct BatchMemoryStats {
  int64_t pooled_buffers = 0;  // freed buffers kept for reuse
  int64_t pooled_bytes = 0;
  int64_t live_buffers = 0;  // buffers owned by tensors now
  int64_t live_bytes = 0;
  int64_t maps = 0;    // buffers mapped fresh (since the process started)
  int64_t reuses = 0;  // allocations served from the pool
  int64_t unmaps = 0;  // buffers returned to the OS
  int64_t peak_live_buffers = 0;  // the most live buffers at once since start or reset_batch_memory_peak()
  int64_t peak_live_bytes = 0;    // the most live bytes at once, likewise
};

BatchMemoryStats batch_memory_stats();

// Restarts the peak counters from what is live now.
void reset_batch_memory_peak();

// The most bytes the pool keeps for reuse (0: return every buffer to the OS at once). Lowering it
// returns the excess (least recently freed first) right away.
void set_batch_memory_capacity(int64_t bytes);
int64_t batch_memory_capacity();

// Requests below this size are served by torch's CPU allocator.
constexpr int64_t kMinPooledBytes = int64_t(1) << 20;

}  // namespace spdl_torch::ops
