#include "pixel_convert.h"

#include <cstring>

namespace spdl_torch::core {
namespace {

inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b) { return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16; }

// Reads one source pixel as (R, G, B, A) at the source depth; A is `opaque` when absent.
// Reads one source pixel as 8-bit (R, G, B, A), keeping the high byte of 16-bit samples; A is 255 when absent.
template <typename In>
inline void read_rgba8(const In* p, int channels, uint32_t (&v)[4]) {
  constexpr int shift = sizeof(In) == 1 ? 0 : 8;
  switch (channels) {
    case 1: v[0] = v[1] = v[2] = p[0] >> shift; v[3] = 0xFF; break;
    case 2: v[0] = v[1] = v[2] = p[0] >> shift; v[3] = p[1] >> shift; break;
    case 3: v[0] = p[0] >> shift; v[1] = p[1] >> shift; v[2] = p[2] >> shift; v[3] = 0xFF; break;
    default: v[0] = p[0] >> shift; v[1] = p[1] >> shift; v[2] = p[2] >> shift; v[3] = p[3] >> shift; break;
  }
}

// Converts to an 8-bit mode: 16-bit samples are first reduced to their high byte, then converted as 8-bit
// (so GRAY of a 16-bit colour image equals GRAY of its RGB output, as in Pillow).
template <typename In>
void convert_to_8bit(const CanonicalImage& src, ColorMode mode, int out_channels, uint8_t* dst) {
  const bool gray_src = src.channels <= 2;
  for (int y = 0; y < src.height; ++y) {
    const In* s = reinterpret_cast<const In*>(src.data + y * src.row_bytes);
    uint8_t* d = dst + int64_t(y) * src.width * out_channels;
    for (int x = 0; x < src.width; ++x, s += src.channels, d += out_channels) {
      uint32_t v[4];
      read_rgba8(s, src.channels, v);
      if (mode == ColorMode::GRAY) {
        d[0] = uint8_t(gray_src ? v[0] : luma(v[0], v[1], v[2]));
      } else {
        for (int c = 0; c < out_channels; ++c) d[c] = uint8_t(v[c]);
      }
    }
  }
}

}  // namespace

ImageShape output_shape(const CanonicalImage& src, ColorMode mode) {
  ImageShape s;
  s.height = src.height;
  s.width = src.width;
  switch (mode) {
    case ColorMode::RGB: s.channels = 3; break;
    case ColorMode::RGBA: s.channels = 4; break;
    case ColorMode::GRAY: s.channels = 1; break;
    case ColorMode::UNCHANGED: s.channels = src.channels; s.type = src.type; break;
  }
  return s;
}

void convert_channels(const CanonicalImage& src, ColorMode mode, uint8_t* dst) {
  const ImageShape out = output_shape(src, mode);
  if (mode == ColorMode::UNCHANGED) {
    for (int y = 0; y < src.height; ++y) {
      std::memcpy(dst + y * out.row_bytes(), src.data + y * src.row_bytes, size_t(out.row_bytes()));
    }
    return;
  }
  if (src.type == ElemType::UInt16) {
    convert_to_8bit<uint16_t>(src, mode, out.channels, dst);
  } else {
    convert_to_8bit<uint8_t>(src, mode, out.channels, dst);
  }
}

}  // namespace spdl_torch::core
