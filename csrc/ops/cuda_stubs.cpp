// SPDX-License-Identifier: BSD-3-Clause
// The CPU variant's kernels of the CUDA ops (csrc/cuda/ holds the real ones): each raises an error that says
// the library was built without CUDA, instead of the dispatcher's "could not run ... with the CUDA backend".
#include <ATen/ATen.h>
#include <torch/library.h>

#ifndef SPDL_TORCH_WITH_CUDA

namespace spdl_torch::ops {
namespace {

constexpr const char* kWhy =
    ": spdl_torch was built without CUDA (the CPU variant: no CUDA toolkit matching torch's CUDA was found at "
    "build time); rebuild with nvcc present, or SPDL_TORCH_CUDA=1 to make a missing toolkit a build error";

std::tuple<at::Tensor, at::Tensor> decode_images_cuda(
    at::TensorList, int64_t, const c10::optional<at::Tensor>&, bool, int64_t, int64_t, int64_t, c10::string_view,
    int64_t, at::ArrayRef<double>, at::ArrayRef<double>, c10::string_view, double, c10::optional<at::ScalarType>,
    c10::optional<at::ArrayRef<double>>, c10::optional<at::ArrayRef<double>>, c10::string_view, bool) {
  TORCH_CHECK(false, "decode_images(device='cuda')", kWhy);
}

at::Tensor normalize_batch(const at::Tensor&, c10::optional<at::ArrayRef<double>>,
                           c10::optional<at::ArrayRef<double>>, at::ScalarType) {
  TORCH_CHECK(false, "normalize_batch", kWhy);
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) {
  m.impl("decode_images_cuda", &decode_images_cuda);
  m.impl("normalize_batch", &normalize_batch);
}
TORCH_LIBRARY_IMPL(spdl_torch, CUDA, m) { m.impl("normalize_batch", &normalize_batch); }

}  // namespace spdl_torch::ops

#endif  // SPDL_TORCH_WITH_CUDA
