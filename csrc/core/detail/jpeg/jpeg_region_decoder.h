// SPDX-License-Identifier: BSD-3-Clause
// Partial JPEG decoding through libjpeg-turbo's libjpeg API: DCT scaling plus only the rows and columns a
// crop needs (jpeg_skip_scanlines / jpeg_crop_scanline), which TurboJPEG 2.1's API cannot do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/detail/jpeg/jpeg_types.h"

namespace spdl_torch::core {

// A rectangle of a JPEG decoded at some DCT scale, in that scale's pixel coordinates.
struct JpegRegion {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// Decodes (at least) `want` of the image decoded at DCT scale `scale` to RGB (3 bytes per pixel, rows
// packed) into `dst` (resized as needed; the caller may keep it for reuse). Returns the region actually
// decoded: want's rows (plus max_v_samp_factor rows above where the image has them), and want's columns
// widened by max_h_samp_factor on each side and then to libjpeg's iMCU column boundary on the left, so
// that fancy chroma upsampling at the region's edges sees the same neighbours as a full decode
// (progressive JPEGs and 4x sampling factors keep all columns: their block smoothing / upsampling reads
// further). Pixels are identical to the same region of decode_jpeg_rgb_scaled (accurate integer IDCT,
// fancy upsampling); rows below the region are not entropy-decoded, except up to the restart marker that
// closes the region's last restart interval (where the damage of a damaged interval shows).
// Returns nullopt where the partial decode cannot vouch for the region: arithmetic-coded streams (a
// damaged region can decode without a warning) and restart intervals that close in the last iMCU row;
// the caller then decodes the whole image.
// `want` must lie inside the scaled image (jpeg_scaled_size of `header`'s sides). CMYK/YCCK data is not
// supported (DecodeError). Throws DecodeError("JPEG: ...") for corrupt or truncated data in the part that
// is decoded, with libjpeg's message.
std::optional<JpegRegion> decode_jpeg_rgb_region(const uint8_t* data, size_t size, const JpegHeader& header,
                                                 JpegScale scale, const JpegRegion& want, std::vector<uint8_t>& dst);

}  // namespace spdl_torch::core
