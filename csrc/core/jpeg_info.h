// SPDX-License-Identifier: BSD-3-Clause
// What a GPU JPEG decoder needs from a JPEG before decoding it: the stored size, the components and the
// EXIF orientation, read from the marker segments (no pixel decoding).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

struct JpegInfo {
  int stored_height = 0;  // as encoded, before EXIF orientation
  int stored_width = 0;
  int components = 0;   // 1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK
  int orientation = 1;  // EXIF orientation 1..8 (1 when absent or malformed)
};

// False when the bytes are not a JPEG (format detection from the first bytes) or its frame header is
// missing or malformed; the reason then goes to `why`.
bool read_jpeg_info(const uint8_t* data, size_t size, JpegInfo& info, const char** why);

}  // namespace spdl_torch::core
