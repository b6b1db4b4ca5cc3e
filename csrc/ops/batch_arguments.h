// SPDX-License-Identifier: BSD-3-Clause
// Conversions of batch-op arguments into core option values, shared by decode_images, decode_video_clips and
// the CUDA decode_images. Torch types only in the binding layer.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <vector>

#include "core/batch_options.h"

namespace spdl_torch::ops {

// The core output type of a batch's dtype: uint8, float32 or bfloat16; a ValueError naming `op` otherwise.
core::OutType batch_out_type(at::ScalarType dtype, const char* op);

// A float list argument as a vector; empty when it is None.
std::vector<double> float_values(const c10::optional<at::ArrayRef<double>>& v);

// The fields of core::BatchOptions every batch op takes the same way: geometry mode, output size, resize,
// crop ranges, horizontal flip, resampling filter, output type and normalisation. The mode and filter names
// are parsed (core::InvalidArgument for an unknown one), the dtype checked (ValueError naming `op`).
void fill_batch_geometry(core::BatchOptions& o, c10::string_view geometry, int64_t height, int64_t width,
                         int64_t resize_shorter, at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
                         double hflip_prob, c10::string_view interpolation, at::ScalarType out_dtype,
                         const c10::optional<at::ArrayRef<double>>& mean,
                         const c10::optional<at::ArrayRef<double>>& std, const char* op);

}  // namespace spdl_torch::ops
