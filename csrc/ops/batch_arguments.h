// Conversions of batch-op arguments into core option values, shared by decode_images, decode_video_clips and
// the CUDA decode_images. Torch types only in the binding layer.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <vector>

#include "../core/batch_options.h"

namespace spdl_torch::ops {

// The core output type of a batch's dtype: uint8, float32 or bfloat16; a ValueError naming `op` otherwise.
core::OutType batch_out_type(at::ScalarType dtype, const char* op);

// A float list argument as a vector; empty when it is None.
std::vector<double> float_values(const c10::optional<at::ArrayRef<double>>& v);

}  // namespace spdl_torch::ops
