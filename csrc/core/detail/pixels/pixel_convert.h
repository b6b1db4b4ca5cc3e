// SPDX-License-Identifier: BSD-3-Clause
// Channel conversions between the canonical decoded layouts (G, GA, RGB, RGBA; 8 or 16 bit) and the
// output colour modes.
#pragma once

#include <cstdint>

#include "core/image_types.h"

namespace spdl_torch::core {

// A decoded image in a canonical layout: HWC interleaved, channels 1 (G), 2 (GA), 3 (RGB) or 4 (RGBA),
// 16-bit samples in native byte order. row_bytes may be negative (bottom-up storage).
struct CanonicalImage {
  const uint8_t* data = nullptr;
  int64_t row_bytes = 0;
  int height = 0;
  int width = 0;
  int channels = 0;
  ElemType type = ElemType::UInt8;
};

// The output shape for `mode`: RGB 3, RGBA 4, GRAY 1, GRAY_ALPHA 2 channels; UNCHANGED keeps the channels.
// The type follows `depth` (BitDepth::Source: 8 bit, UNCHANGED keeps the source's depth).
ImageShape output_shape(const CanonicalImage& src, ColorMode mode, BitDepth depth = BitDepth::Source);

// Converts src into dst (HWC, contiguous, shape == output_shape(src, mode, depth)).
// 16 -> 8 bit keeps the high byte (as libpng's png_set_strip_16 and Pillow's "RGB;16B" raw mode), 8 -> 16
// bit replicates it (v * 257, libpng's png_set_expand_16); the conversion then runs at the output depth:
// colour -> GRAY / GRAY_ALPHA uses ITU-R 601-2 luma L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, Pillow's
// "L" and "LA"; alpha is dropped for RGB and GRAY, and set to the maximum where the source has none.
void convert_channels(const CanonicalImage& src, ColorMode mode, uint8_t* dst, BitDepth depth = BitDepth::Source);

}  // namespace spdl_torch::core
