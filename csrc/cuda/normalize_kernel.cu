// SPDX-License-Identifier: BSD-3-Clause
#include <cuda_bf16.h>

#include "cuda/normalize_kernel.h"

namespace spdl_torch::cuda {
namespace {

struct Params {
  float mean[4];
  float std[4];
};

__device__ inline void coords(int64_t i, const Strided4& v, int64_t c[4]) {
  for (int d = 3; d >= 0; --d) {
    c[d] = i % v.size[d];
    i /= v.size[d];
  }
}

__device__ inline int64_t offset(const int64_t c[4], const Strided4& v) {
  return c[0] * v.stride[0] + c[1] * v.stride[1] + c[2] * v.stride[2] + c[3] * v.stride[3];
}

template <bool kBf16>
__global__ void normalize_uint8_kernel(const uint8_t* __restrict__ in, Strided4 in_view, void* __restrict__ out,
                                       Strided4 out_view, Params p, bool normalize, int64_t total) {
  const float inv255 = float(1.0 / 255.0);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c[4];
    coords(i, in_view, c);
    const float x = float(in[offset(c, in_view)]);
    if constexpr (kBf16) {
      // torch: to(bfloat16) (exact for 0..255), mul_(1/255), sub(mean), div_(std); each result rounded
      float v = __bfloat162float(__float2bfloat16_rn(__fmul_rn(x, inv255)));
      if (normalize) {
        v = __bfloat162float(__float2bfloat16_rn(__fsub_rn(v, p.mean[c[1]])));
        v = __bfloat162float(__float2bfloat16_rn(__fdiv_rn(v, p.std[c[1]])));
      }
      static_cast<__nv_bfloat16*>(out)[offset(c, out_view)] = __float2bfloat16_rn(v);
    } else {
      float v = __fmul_rn(x, inv255);
      if (normalize) v = __fdiv_rn(__fsub_rn(v, p.mean[c[1]]), p.std[c[1]]);
      static_cast<float*>(out)[offset(c, out_view)] = v;
    }
  }
}

}  // namespace

cudaError_t launch_normalize_uint8(const uint8_t* in, const Strided4& in_view, void* out, const Strided4& out_view,
                                   NormalizeOut out_type, const float* mean, const float* std, bool normalize,
                                   cudaStream_t stream) {
  const int64_t total = in_view.size[0] * in_view.size[1] * in_view.size[2] * in_view.size[3];
  if (total == 0) return cudaSuccess;
  if (in_view.size[1] > 4) return cudaErrorInvalidValue;
  Params p{};
  for (int64_t k = 0; k < in_view.size[1]; ++k) {
    p.mean[k] = out_type == NormalizeOut::BFloat16 ? __bfloat162float(__float2bfloat16_rn(mean[k])) : mean[k];
    p.std[k] = out_type == NormalizeOut::BFloat16 ? __bfloat162float(__float2bfloat16_rn(std[k])) : std[k];
  }
  const int threads = 256;
  const int64_t wanted = (total + threads - 1) / threads;
  const int blocks = int(wanted < 65536 ? wanted : 65536);
  if (out_type == NormalizeOut::BFloat16) {
    normalize_uint8_kernel<true><<<blocks, threads, 0, stream>>>(in, in_view, out, out_view, p, normalize, total);
  } else {
    normalize_uint8_kernel<false><<<blocks, threads, 0, stream>>>(in, in_view, out, out_view, p, normalize, total);
  }
  return cudaGetLastError();
}

}  // namespace spdl_torch::cuda
