// SPDX-License-Identifier: BSD-3-Clause
// Erasing on a finished slot (after the dtype conversion and normalisation): torchvision's erase(img, i, j,
// h, w, v) with v a value per channel or, for "random", normal(0, 1) values drawn from the sample's seed.
#pragma once

#include <cstdint>

#include "core/resample.h"

namespace spdl_torch::core::augment {

// The stream the random values of a sample's box `b` are drawn from: SplitMix64(seed ^ kEraseStream ^
// (b * kEraseBoxStep)) (box 0: seed ^ kEraseStream), then per channel, row and column of the box (in that
// order) one Box-Muller normal value each.
constexpr uint64_t kEraseStream = 0x45524153452D5631ull;  // "ERASE-V1"
constexpr uint64_t kEraseBoxStep = 0x9E3779B97F4A7C15ull;  // the golden-ratio increment of SplitMix64

// Writes the erase row (validate_erase) into `out`: rows [top, top + height) and columns [left, left +
// width), clipped to the slot as a slice is; apply 1: v0, v1, v2 for channels 0, 1, 2 (a 1-channel slot:
// v0); apply 2: normal(0, 1) values. Values are in the slot's value space: float32 as is, bfloat16
// rounded to nearest even, uint8 truncated toward zero after a clamp to [0, 255].
// `box`: the row's index among the sample's erase rows (its random stream).
void erase(const float* row, int64_t seed, const SlotWriter& out, int64_t box = 0);

}  // namespace spdl_torch::core::augment
