// build_info: what this build of the library holds ("variant=cuda"/"variant=cpu", "nvjpeg=1"/"nvjpeg=0"),
// read by spdl_torch.cuda to give clear errors for a CUDA feature the build lacks. No tensor inputs, so the
// kernel sits under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <vector>

namespace spdl_torch::ops {
namespace {

std::vector<std::string> build_info() {
#ifdef SPDL_TORCH_WITH_CUDA
  std::vector<std::string> info = {"variant=cuda"};
#else
  std::vector<std::string> info = {"variant=cpu"};
#endif
#ifdef SPDL_TORCH_WITH_NVJPEG
  info.emplace_back("nvjpeg=1");
#else
  info.emplace_back("nvjpeg=0");
#endif
  return info;
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("build_info", &build_info); }

}  // namespace spdl_torch::ops
