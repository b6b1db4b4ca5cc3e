// SPDX-License-Identifier: BSD-3-Clause
// Reading JPEG marker segments before the first scan: the frame header (SOFn) and the EXIF orientation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

struct JpegFrameInfo {
  int width = 0;
  int height = 0;
  int components = 0;  // 1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK
};

// Reads the first SOFn frame header; false when there is none before the first scan or it is malformed.
bool jpeg_frame_info(const uint8_t* data, size_t size, JpegFrameInfo& info);

// Returns the EXIF orientation 1..8 of a JPEG, or 1 when absent or malformed. Reads only within
// [data, data + size): every offset is bounds-checked, so hostile EXIF cannot read out of range.
int jpeg_exif_orientation(const uint8_t* data, size_t size);

}  // namespace spdl_torch::core
