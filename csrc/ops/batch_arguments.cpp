#include "batch_arguments.h"

#include <c10/util/Exception.h>

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

}  // namespace spdl_torch::ops
