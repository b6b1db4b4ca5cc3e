// SPDX-License-Identifier: BSD-3-Clause
#include "ops/batch_arguments.h"

#include <c10/util/Exception.h>

#include <string>

namespace spdl_torch::ops {

core::OutType batch_out_type(at::ScalarType dtype, const char* op) {
  switch (dtype) {
    case at::kByte: return core::OutType::UInt8;
    case at::kFloat: return core::OutType::Float32;
    case at::kBFloat16: return core::OutType::BFloat16;
    default:
      TORCH_CHECK_VALUE(false, op, ": expected dtype uint8, float32 or bfloat16, got ", dtype);
  }
}

std::vector<double> float_values(const c10::optional<at::ArrayRef<double>>& v) {
  return v.has_value() ? std::vector<double>(v->begin(), v->end()) : std::vector<double>();
}

void fill_batch_geometry(core::BatchOptions& o, c10::string_view geometry, int64_t height, int64_t width,
                         int64_t resize_shorter, at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
                         double hflip_prob, c10::string_view interpolation, at::ScalarType out_dtype,
                         const c10::optional<at::ArrayRef<double>>& mean,
                         const c10::optional<at::ArrayRef<double>>& std, const char* op) {
  o.geometry = core::parse_geometry_mode(std::string(geometry));
  o.height = height;
  o.width = width;
  o.resize_shorter = resize_shorter;
  o.scale.assign(scale.begin(), scale.end());
  o.ratio.assign(ratio.begin(), ratio.end());
  o.hflip_prob = hflip_prob;
  o.filter = core::parse_resample_filter(std::string(interpolation));
  o.out_type = batch_out_type(out_dtype, op);
  o.mean = float_values(mean);
  o.std = float_values(std);
}

}  // namespace spdl_torch::ops
