// SPDX-License-Identifier: BSD-3-Clause
// augment_op_table: the augmentation ops of decode_images(augment=..., erase=...) as the library declares them
// (csrc/core/augment/op_table.h), as JSON: spdl_torch/transforms/_augment_codes.py reads it at import and builds
// the rows by argument name from it. No tensor inputs, so the kernel sits under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "core/augment/ops.h"

namespace spdl_torch::ops {
namespace {

std::string augment_op_table() { return core::augment::op_table_json(); }

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("augment_op_table", &augment_op_table); }

}  // namespace spdl_torch::ops
