// SPDX-License-Identifier: BSD-3-Clause
// read_file: a whole file into a uint8 tensor. No tensor inputs, so the kernel sits under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "core/file_reader.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

at::Tensor read_file(c10::string_view path, int64_t max_bytes) {
  return translate_core_errors("read_file", [&] {
    const core::FileReader file{std::string(path)};
    file.check_size(max_bytes);
    at::Tensor out = at::empty({file.size()}, at::TensorOptions().dtype(at::kByte));
    file.read_all(out.data_ptr<uint8_t>(), file.size());
    return out;
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("read_file", &read_file); }

}  // namespace spdl_torch::ops
