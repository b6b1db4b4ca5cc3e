// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/image_format.h"

#include <cstdlib>
#include <cstring>

namespace spdl_torch::core {
namespace {

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t n, size_t offset = 0) {
  return size >= offset + n && std::memcmp(data + offset, magic, n) == 0;
}

}  // namespace

ImageFormat detect_image_format(const uint8_t* data, size_t size) {
  if (starts_with(data, size, "\xFF\xD8\xFF", 3)) return ImageFormat::JPEG;
  if (starts_with(data, size, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::PNG;
  if (starts_with(data, size, "GIF87a", 6) || starts_with(data, size, "GIF89a", 6)) return ImageFormat::GIF;
  if (starts_with(data, size, "RIFF", 4) && starts_with(data, size, "WEBP", 4, 8)) return ImageFormat::WEBP;
  if (starts_with(data, size, "II*\0", 4) || starts_with(data, size, "MM\0*", 4)) return ImageFormat::TIFF;
  if (starts_with(data, size, "BM", 2) && size >= 26) return ImageFormat::BMP;
  // Binary Netpbm (torchvision's ImageFolder lists .ppm and .pgm files)
  if (size >= 3 && data[0] == 'P' && (data[2] == ' ' || data[2] == '\n' || data[2] == '\r' || data[2] == '\t')) {
    if (data[1] == '4') return ImageFormat::PBM;
    if (data[1] == '5') return ImageFormat::PGM;
    if (data[1] == '6') return ImageFormat::PPM;
  }
  return ImageFormat::Unknown;
}

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::JPEG: return "JPEG";
    case ImageFormat::PNG: return "PNG";
    case ImageFormat::GIF: return "GIF";
    case ImageFormat::BMP: return "BMP";
    case ImageFormat::WEBP: return "WebP";
    case ImageFormat::TIFF: return "TIFF";
    case ImageFormat::PBM: return "PBM";
    case ImageFormat::PGM: return "PGM";
    case ImageFormat::PPM: return "PPM";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

}  // namespace spdl_torch::core

namespace spdl_torch::core {
namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le24(const uint8_t* p) { return le16(p) | uint32_t(p[2]) << 16; }
int32_t le32s(const uint8_t* p) { return int32_t(le24(p) | uint32_t(p[3]) << 24); }

}  // namespace

bool sniff_image_size(ImageFormat format, const uint8_t* data, size_t size, int64_t& width, int64_t& height) {
  switch (format) {
    case ImageFormat::PNG:  // IHDR is the first chunk: width and height are big-endian at 16 and 20
      if (size < 24) return false;
      width = be32(data + 16);
      height = be32(data + 20);
      return true;
    case ImageFormat::GIF:  // logical screen descriptor
      if (size < 10) return false;
      width = le16(data + 6);
      height = le16(data + 8);
      return true;
    case ImageFormat::BMP:  // BITMAPINFOHEADER; a negative height means top-down rows
      if (size < 26) return false;
      width = std::abs(int64_t(le32s(data + 18)));
      height = std::abs(int64_t(le32s(data + 22)));
      return true;
    case ImageFormat::WEBP:
      if (size < 30) return false;
      if (std::memcmp(data + 12, "VP8X", 4) == 0) {
        width = int64_t(le24(data + 24)) + 1;
        height = int64_t(le24(data + 27)) + 1;
        return true;
      }
      if (std::memcmp(data + 12, "VP8L", 4) == 0 && size >= 25) {
        const uint32_t bits = le24(data + 21) | uint32_t(data[24]) << 24;
        width = int64_t(bits & 0x3FFF) + 1;
        height = int64_t((bits >> 14) & 0x3FFF) + 1;
        return true;
      }
      if (std::memcmp(data + 12, "VP8 ", 4) == 0) {
        width = le16(data + 26) & 0x3FFF;
        height = le16(data + 28) & 0x3FFF;
        return true;
      }
      return false;
    default:
      return false;
  }
}

bool png_chunks_complete(const uint8_t* data, size_t size) {
  size_t pos = 8;
  while (size - pos >= 12) {
    const uint64_t length = be32(data + pos);
    if (length > size - pos - 12) return false;
    if (std::memcmp(data + pos + 4, "IEND", 4) == 0) return true;
    pos += 12 + length;
  }
  return false;
}

}  // namespace spdl_torch::core
