// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/jpeg/jpeg_markers.h"

#include <cstring>
#include <functional>

#include "core/detail/parse/tiff_ifd.h"

namespace spdl_torch::core {
namespace {

// Calls visit(marker, payload, payload_size) for each marker segment after SOI until the first scan,
// the end of the image or visit returning true. Every length is bounds-checked.
void walk_segments(const uint8_t* data, size_t size,
                   const std::function<bool(uint8_t, const uint8_t*, size_t)>& visit) {
  size_t pos = 2;
  while (pos + 4 <= size) {
    if (data[pos] != 0xFF) return;
    const uint8_t marker = data[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return;  // start of scan / end of image
    const size_t len = size_t(data[pos + 2]) << 8 | data[pos + 3];
    if (len < 2 || pos + 2 + len > size) return;
    if (visit(marker, data + pos + 4, len - 2)) return;
    pos += 2 + len;
  }
}

bool is_sof(uint8_t marker) {  // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC)
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

}  // namespace

bool jpeg_frame_info(const uint8_t* data, size_t size, JpegFrameInfo& info) {
  bool found = false;
  walk_segments(data, size, [&](uint8_t marker, const uint8_t* p, size_t n) {
    if (!is_sof(marker)) return false;
    if (n >= 6) {
      info.height = p[1] << 8 | p[2];
      info.width = p[3] << 8 | p[4];
      info.components = p[5];
      found = true;
    }
    return true;
  });
  return found;
}

int jpeg_exif_orientation(const uint8_t* data, size_t size) {
  int orientation = 1;
  walk_segments(data, size, [&](uint8_t marker, const uint8_t* p, size_t n) {
    if (marker != 0xE1 || n < 6 || std::memcmp(p, "Exif\0\0", 6) != 0) return false;
    uint32_t value = 0;
    if (tiff_ifd0_value(p + 6, n - 6, kTiffTagOrientation, value) && value >= 1 && value <= 8) {
      orientation = int(value);
    }
    return true;
  });
  return orientation;
}

}  // namespace spdl_torch::core
