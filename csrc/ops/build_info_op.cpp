// SPDX-License-Identifier: BSD-3-Clause
// build_info: what this build of the library holds ("variant=cuda"/"variant=cpu", "nvjpeg=1"/"nvjpeg=0",
// "ffmpeg=1"/"ffmpeg=0", "decoders=jpeg,png,..."), read by spdl_torch.build_info() to give clear errors for a
// feature the build lacks. No tensor inputs, so the kernel sits under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "core/features.h"

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
  info.emplace_back(core::kWithFfmpeg ? "ffmpeg=1" : "ffmpeg=0");
  info.emplace_back(std::string("decoders=") + core::kImageDecoders + (core::kWithFfmpeg ? ",video,audio" : ""));
  return info;
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("build_info", &build_info); }

}  // namespace spdl_torch::ops
