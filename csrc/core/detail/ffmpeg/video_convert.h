// SPDX-License-Identifier: BSD-3-Clause
// Video frames -> RGB24 as the ffmpeg CLI converts them (`-pix_fmt rgb24`: libswscale with flags=bicubic,
// the frame's colour matrix and range as its scale filter reads them), and the display rotation.
// Internal header.
#pragma once

#include <cstdint>
#include <vector>

#include "core/detail/ffmpeg/ffmpeg_utils.h"

namespace spdl_torch::core::detail {

// Clockwise degrees (0, 90, 180, 270) the ffmpeg CLI's autorotate applies to the stream's frames (the
// display matrix, rounded to the nearest quarter turn; 0 without one).
int display_rotation(const AVStream* stream);

class RgbConverter {
 public:
  // Converts `frame` into dst (height rows of width * 3 bytes, `row_bytes` apart). dst must have
  // rgb_buffer_bytes(width, height) bytes (libswscale's SIMD code may write a little past a row).
  void convert(const AVFrame* frame, uint8_t* dst, int64_t row_bytes);

 private:
  SwsContextPtr ctx_;
  int width_ = -1, height_ = -1, format_ = -1, colorspace_ = -1, range_ = -1;
};

// Row pitch and buffer size of a converted frame (64-byte aligned rows plus slack for SIMD writes).
int64_t rgb_row_bytes(int64_t width);
int64_t rgb_buffer_bytes(int64_t width, int64_t height);

// Rotates an RGB image (HWC, rows src_row_bytes apart) clockwise by `degrees` (90, 180, 270) into dst
// (tightly packed, out height x out width: swapped for 90/270).
void rotate_rgb(const uint8_t* src, int64_t height, int64_t width, int64_t src_row_bytes, int degrees,
                uint8_t* dst);

}  // namespace spdl_torch::core::detail
