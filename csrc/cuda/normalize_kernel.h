// SPDX-License-Identifier: BSD-3-Clause
// The GPU's half of ToDtype(scale=True) + Normalize on a uint8 batch: one pass, no torch headers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace spdl_torch::cuda {

enum class NormalizeOut { Float32, BFloat16 };

// A 4-D strided view [N, C, H, W] (element strides), C <= 4.
struct Strided4 {
  int64_t size[4];
  int64_t stride[4];
};

// out[n, c, h, w] = (in / 255 - mean[c]) / std[c], in torchvision's order and roundings: x converted to the
// output type, times float(1 / 255), minus mean[c], divided by std[c]; for bfloat16 every step is rounded
// to bfloat16 (as torch's bfloat16 ops) and mean/std are bfloat16 values. No fused multiply-adds.
// `in` and `out` share the sizes; their strides may differ (contiguous or channels_last). Returns the
// launch's error (cudaSuccess when queued on `stream`).
cudaError_t launch_normalize_uint8(const uint8_t* in, const Strided4& in_view, void* out, const Strided4& out_view,
                                   NormalizeOut out_type, const float* mean, const float* std, bool normalize,
                                   cudaStream_t stream);

}  // namespace spdl_torch::cuda
