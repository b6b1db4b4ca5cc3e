// SPDX-License-Identifier: BSD-3-Clause
#include "ops/error_translation.h"

#include <ATen/core/Tensor.h>

namespace spdl_torch::ops {

std::string tagged_message(const char* kind, std::initializer_list<TagField> fields, const std::string& reason) {
  std::string message = std::string("[") + kind;
  for (const TagField& f : fields) message += std::string(" ") + f.key + "=" + std::to_string(f.value);
  return message + "] " + reason;
}

void throw_tagged(const char* kind, std::initializer_list<TagField> fields, const std::string& reason) {
  TORCH_CHECK(false, tagged_message(kind, fields, reason));
}

void check_encoded_bytes(const at::Tensor& data, const char* op) {
  TORCH_CHECK(data.device().is_cpu(), op, ": expected the encoded data on the CPU, got a tensor on ", data.device());
  TORCH_CHECK(data.scalar_type() == at::kByte, op, ": expected the encoded data as a uint8 tensor, got dtype ",
              data.scalar_type());
  TORCH_CHECK(data.dim() == 1, op, ": expected the encoded data as a 1-D tensor, got ", data.dim(),
              " dimensions (shape ", data.sizes(), ")");
}

}  // namespace spdl_torch::ops
