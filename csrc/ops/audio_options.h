// SPDX-License-Identifier: BSD-3-Clause
// Shared by the audio ops: the output dtype's sample type and the window / length checks.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>

#include "core/audio_types.h"
#include "core/media_source.h"

namespace spdl_torch::ops {

inline core::SampleType audio_sample_type(c10::optional<at::ScalarType> dtype, const char* op) {
  const at::ScalarType t = dtype.value_or(at::kFloat);
  TORCH_CHECK_VALUE(t == at::kFloat || t == at::kShort, op, ": expected dtype float32 or int16, got ", t);
  return t == at::kFloat ? core::SampleType::Float32 : core::SampleType::Int16;
}

inline at::ScalarType audio_scalar_type(core::SampleType type) {
  return type == core::SampleType::Float32 ? at::kFloat : at::kShort;
}

// The bytes of a contiguous 1-D uint8 tensor as a MediaSource (an empty tensor stays an empty input, never
// a path).
inline core::MediaSource audio_bytes_source(const at::Tensor& contiguous_bytes) {
  static const uint8_t kNothing = 0;
  const auto* data = contiguous_bytes.numel() > 0 ? contiguous_bytes.data_ptr<uint8_t>() : &kNothing;
  return core::MediaSource::from_memory(data, size_t(contiguous_bytes.numel()));
}

}  // namespace spdl_torch::ops
