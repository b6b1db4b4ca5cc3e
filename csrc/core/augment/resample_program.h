// SPDX-License-Identifier: BSD-3-Clause
// The resample of a sample with an augmentation program: resize into a per-thread uint8 RGB scratch
// image, run the program on it, then convert it into the slot (dtype, layout, grey rule, normalisation)
// with the same writer as the plain path.
#pragma once

#include <cstdint>

#include "core/resample.h"

namespace spdl_torch::core::augment {

// resample_into(src, ..., wy, wx, out) with the program's `steps` rows (ops.h) run on the resized RGB
// pixels before they are written. The slot's grey rule applies to the program's result.
void resample_with_program(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                           const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out, const float* rows,
                           int64_t steps);

}  // namespace spdl_torch::core::augment
