// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/image_chunks.h"

#include <cstring>
#include <functional>

#include "core/detail/parse/tiff_ifd.h"

namespace spdl_torch::core {
namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// EXIF payloads are TIFF structures; some writers put JPEG's APP1 "Exif\0\0" prefix in front.
int exif_orientation(const uint8_t* p, size_t n) {
  if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
    p += 6;
    n -= 6;
  }
  uint32_t value = 0;
  if (tiff_ifd0_value(p, n, kTiffTagOrientation, value) && value >= 1 && value <= 8) return int(value);
  return 1;
}

// Calls visit(type, payload, payload_size) for each PNG chunk after the signature until IEND, a chunk
// that does not fit, or visit returning true.
void walk_png(const uint8_t* data, size_t size, const std::function<bool(const uint8_t*, const uint8_t*, size_t)>& visit) {
  size_t pos = 8;
  while (pos <= size && size - pos >= 12) {
    const size_t length = be32(data + pos);
    if (length > size - pos - 12) return;
    const uint8_t* type = data + pos + 4;
    if (std::memcmp(type, "IEND", 4) == 0 || visit(type, data + pos + 8, length)) return;
    pos += 12 + length;
  }
}

// The same over the chunks of a RIFF WebP file (payloads padded to even sizes).
void walk_webp(const uint8_t* data, size_t size, const std::function<bool(const uint8_t*, const uint8_t*, size_t)>& visit) {
  size_t pos = 12;
  while (pos <= size && size - pos >= 8) {
    const size_t length = le32(data + pos + 4);
    if (length > size - pos - 8) return;
    if (visit(data + pos, data + pos + 8, length)) return;
    pos += 8 + length + (length & 1);
  }
}

}  // namespace

int png_exif_orientation(const uint8_t* data, size_t size) {
  int orientation = 1;
  walk_png(data, size, [&](const uint8_t* type, const uint8_t* p, size_t n) {
    if (std::memcmp(type, "eXIf", 4) != 0) return false;
    orientation = exif_orientation(p, n);
    return true;
  });
  return orientation;
}

int webp_exif_orientation(const uint8_t* data, size_t size) {
  int orientation = 1;
  walk_webp(data, size, [&](const uint8_t* type, const uint8_t* p, size_t n) {
    if (std::memcmp(type, "EXIF", 4) != 0) return false;
    orientation = exif_orientation(p, n);
    return true;
  });
  return orientation;
}

bool webp_has_alpha(const uint8_t* data, size_t size) {
  bool alpha = false;
  walk_webp(data, size, [&](const uint8_t* type, const uint8_t* p, size_t n) {
    if (std::memcmp(type, "VP8X", 4) == 0 && n >= 1) alpha |= (p[0] & 0x10) != 0;
    if (std::memcmp(type, "ALPH", 4) == 0) alpha = true;
    // VP8L header: signature 0x2f, then 14 bits width - 1, 14 bits height - 1, 1 bit alpha_is_used.
    if (std::memcmp(type, "VP8L", 4) == 0 && n >= 5 && p[0] == 0x2F) alpha |= ((le32(p + 1) >> 28) & 1) != 0;
    return alpha;
  });
  return alpha;
}

}  // namespace spdl_torch::core
