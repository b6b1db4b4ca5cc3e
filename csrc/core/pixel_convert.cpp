#include "pixel_convert.h"

#include <cstring>

namespace spdl_torch::core {
namespace {

inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b) { return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16; }

// Reads one source pixel as (R, G, B, A) at the source depth; A is `opaque` when absent.
template <typename In>
inline void read_rgba(const In* p, int channels, uint32_t opaque, uint32_t (&v)[4]) {
  switch (channels) {
    case 1: v[0] = v[1] = v[2] = p[0]; v[3] = opaque; break;
    case 2: v[0] = v[1] = v[2] = p[0]; v[3] = p[1]; break;
    case 3: v[0] = p[0]; v[1] = p[1]; v[2] = p[2]; v[3] = opaque; break;
    default: v[0] = p[0]; v[1] = p[1]; v[2] = p[2]; v[3] = p[3]; break;
  }
}

template <typename In, typename Out>
void convert(const CanonicalImage& src, ColorMode mode, int out_channels, int shift, Out* dst) {
  const uint32_t opaque = sizeof(In) == 1 ? 0xFF : 0xFFFF;
  const bool gray_src = src.channels <= 2;
  for (int y = 0; y < src.height; ++y) {
    const In* s = reinterpret_cast<const In*>(src.data + y * src.row_bytes);
    Out* d = dst + int64_t(y) * src.width * out_channels;
    for (int x = 0; x < src.width; ++x, s += src.channels, d += out_channels) {
      uint32_t v[4];
      read_rgba(s, src.channels, opaque, v);
      if (mode == ColorMode::GRAY) {
        d[0] = Out((gray_src ? v[0] : luma(v[0], v[1], v[2])) >> shift);
      } else {
        for (int c = 0; c < out_channels; ++c) d[c] = Out(v[c] >> shift);
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
    convert<uint16_t, uint8_t>(src, mode, out.channels, 8, dst);
  } else {
    convert<uint8_t, uint8_t>(src, mode, out.channels, 0, dst);
  }
}

}  // namespace spdl_torch::core
