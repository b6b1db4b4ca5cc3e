// SPDX-License-Identifier: BSD-3-Clause
// The AVX2 resample kernel for 3-channel slots (x86-64 with GCC or Clang; chosen at run time by
// resample_into where the CPU has AVX2).
#pragma once

#include <cstdint>

#include "core/resample.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SPDL_TORCH_RESAMPLE_AVX2 1
#endif

namespace spdl_torch::core::detail {

#if defined(SPDL_TORCH_RESAMPLE_AVX2)
// resample_into_generic for 3 channels, 8 output rows at a time, bit-identical to it. The arguments must
// have passed check_resample_args; the CPU must have AVX2.
void resample_rgb_avx2(const uint8_t* src, int64_t src_row_bytes, const AxisWeights& wy, const AxisWeights& wx,
                       const SlotWriter& out);
#endif

}  // namespace spdl_torch::core::detail
