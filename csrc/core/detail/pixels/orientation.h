// SPDX-License-Identifier: BSD-3-Clause
// EXIF orientation as a copy from an upright-as-stored HWC image into its displayed orientation.
#pragma once

#include <cstdint>

#include "core/image_types.h"

namespace spdl_torch::core {

// Whether EXIF orientation `orientation` (1..8) turns the image by 90 degrees: 5..8 swap height and width.
inline bool orientation_swaps_axes(int orientation) { return orientation >= 5 && orientation <= 8; }

// Shape after applying EXIF orientation 1..8 (5..8 swap height and width).
ImageShape oriented_shape(const ImageShape& stored, int orientation);

// Copies src (HWC, shape `stored`) into dst (HWC, oriented_shape(stored, orientation)), applying the
// transform of EXIF 2.32 tag 0x0112 (the same as PIL.ImageOps.exif_transpose):
// 2 mirror left-right, 3 rotate 180, 4 mirror top-bottom, 5 transpose, 6 rotate 90 clockwise,
// 7 transverse, 8 rotate 90 counter-clockwise. Orientation 1 (or any other value) copies as is.
void apply_orientation(const uint8_t* src, const ImageShape& stored, int orientation, uint8_t* dst);

}  // namespace spdl_torch::core
