// SPDX-License-Identifier: BSD-3-Clause
// set_batch_memory_capacity / batch_memory_stats: the pool that holds decode_images' non-pinned output memory
// (batch_memory.h). No tensor inputs: kernels under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "ops/batch_memory.h"

namespace spdl_torch::ops {
namespace {

// [pooled_buffers, pooled_bytes, live_buffers, live_bytes, maps, reuses, unmaps, peak_live_buffers,
// peak_live_bytes, capacity]: the Python wrapper names them (spdl_torch.io.batch_memory_stats). reset_peak:
// the peaks restart from the buffers live now, after they were read.
std::vector<int64_t> batch_memory_stats_op(bool reset_peak) {
  const BatchMemoryStats s = batch_memory_stats();
  if (reset_peak) reset_batch_memory_peak();
  return {s.pooled_buffers, s.pooled_bytes, s.live_buffers,      s.live_bytes,      s.maps,
          s.reuses,         s.unmaps,       s.peak_live_buffers, s.peak_live_bytes, batch_memory_capacity()};
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) {
  m.impl("set_batch_memory_capacity", &set_batch_memory_capacity);
  m.impl("batch_memory_stats", &batch_memory_stats_op);
}

}  // namespace spdl_torch::ops
