// SPDX-License-Identifier: BSD-3-Clause
// normalize_batch: ToDtype(scale=True) + Normalize of a uint8 CUDA batch in one kernel (normalize_kernel.cu),
// for batches copied to the GPU as uint8 (a quarter of the bytes over PCIe).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <vector>

#include "cuda/normalize_kernel.h"

namespace spdl_torch::ops {
namespace {

cuda::Strided4 view_of(const at::Tensor& t) {
  cuda::Strided4 v{};
  for (int d = 0; d < 4; ++d) {
    v.size[d] = t.size(d);
    v.stride[d] = t.stride(d);
  }
  return v;
}

at::Tensor normalize_batch(const at::Tensor& batch, c10::optional<at::ArrayRef<double>> mean,
                           c10::optional<at::ArrayRef<double>> std, at::ScalarType dtype) {
  TORCH_CHECK_VALUE(batch.is_cuda() && batch.scalar_type() == at::kByte && batch.dim() == 4,
                    "normalize_batch: expected a uint8 CUDA Tensor[N, C, H, W], got ", batch.scalar_type(), " ",
                    batch.device(), " of shape ", batch.sizes());
  const int64_t channels = batch.size(1);
  TORCH_CHECK_VALUE(channels >= 1 && channels <= 4, "normalize_batch: expected 1 to 4 channels, got ", channels);
  TORCH_CHECK_VALUE(dtype == at::kFloat || dtype == at::kBFloat16,
                    "normalize_batch: expected dtype float32 or bfloat16, got ", dtype);
  TORCH_CHECK_VALUE(mean.has_value() == std.has_value(), "normalize_batch: expected both mean and std, or neither");
  std::vector<float> m(size_t(channels), 0.0f), s(size_t(channels), 1.0f);
  if (mean.has_value()) {
    TORCH_CHECK_VALUE((mean->size() == 1 || int64_t(mean->size()) == channels) &&
                          (std->size() == 1 || int64_t(std->size()) == channels),
                      "normalize_batch: expected 1 or ", channels, " values of mean and std, got ", mean->size(),
                      " and ", std->size());
    for (int64_t c = 0; c < channels; ++c) {
      m[size_t(c)] = float((*mean)[mean->size() == 1 ? 0 : size_t(c)]);
      s[size_t(c)] = float((*std)[std->size() == 1 ? 0 : size_t(c)]);
      TORCH_CHECK_VALUE(s[size_t(c)] != 0.0f, "normalize_batch: std evaluated to zero, leading to division by zero");
    }
  }
  const c10::cuda::CUDAGuard guard(batch.device());
  // the input's memory format: channels-last strides (a contiguous NHWC buffer seen as NCHW) stay channels-last
  const bool channels_last = batch.is_contiguous(at::MemoryFormat::ChannelsLast) && !batch.is_contiguous();
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor out = at::empty(batch.sizes(), batch.options().dtype(dtype), format);
  const cudaError_t err = cuda::launch_normalize_uint8(
      batch.data_ptr<uint8_t>(), view_of(batch), out.data_ptr(), view_of(out),
      dtype == at::kBFloat16 ? cuda::NormalizeOut::BFloat16 : cuda::NormalizeOut::Float32, m.data(), s.data(),
      mean.has_value(), c10::cuda::getCurrentCUDAStream(batch.device().index()).stream());
  TORCH_CHECK(err == cudaSuccess, "normalize_batch: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CUDA, m) { m.impl("normalize_batch", &normalize_batch); }

}  // namespace spdl_torch::ops
