// SPDX-License-Identifier: BSD-3-Clause
// Metadata read straight from the chunk structure of PNG and WebP (RIFF) files: the EXIF orientation and
// WebP's alpha flag. Every length and offset is bounds-checked; malformed structure reads as "absent".
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

// The orientation (1..8) in a PNG's eXIf chunk (anywhere before IEND, as Pillow reads it), or 1 when there
// is none, the value is out of range or the chunk is malformed.
int png_exif_orientation(const uint8_t* data, size_t size);

// The orientation (1..8) in a WebP's EXIF chunk, or 1 (as png_exif_orientation).
int webp_exif_orientation(const uint8_t* data, size_t size);

// Whether a WebP image has an alpha channel, as libwebp's WebPGetFeatures says: the VP8X alpha flag, an ALPH
// chunk, or a lossless (VP8L) bitstream whose header sets alpha_is_used. Lossy VP8 alone has none.
bool webp_has_alpha(const uint8_t* data, size_t size);

}  // namespace spdl_torch::core
