// SPDX-License-Identifier: BSD-3-Clause
// JPEG header and DCT scale types shared by the TurboJPEG whole-image decoder, the libjpeg region decoder
// and the batch planner.
#pragma once

#include <cstdint>

namespace spdl_torch::core {

struct JpegHeader {
  int width = 0;
  int height = 0;
  bool gray = false;  // single-component (greyscale) JPEG
  bool cmyk = false;  // CMYK or YCCK JPEG (converted to RGB on decode)
};

// A DCT scaling factor num/denom of libjpeg-turbo (1/8, 1/4, 3/8, ... 2).
struct JpegScale {
  int num = 1;
  int denom = 1;
  double value() const { return double(num) / double(denom); }
};

// The size of a `size`-pixel axis decoded at `scale`: ceil(size * num / denom), as TJSCALED.
inline int64_t jpeg_scaled_size(int64_t size, JpegScale scale) {
  return (size * scale.num + scale.denom - 1) / scale.denom;
}

}  // namespace spdl_torch::core
