// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/pixels/pixel_convert.h"

#include <cstring>

namespace spdl_torch::core {
namespace {

// ITU-R 601-2 luma at any depth up to 16 bit: 65535 * 65536 + 2^15 still fits in 32 bits.
inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b) { return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16; }

// One sample of type In at the depth of Out: 16 -> 8 bit keeps the high byte, 8 -> 16 bit replicates it.
template <typename In, typename Out>
inline uint32_t at_depth(In v) {
  if constexpr (sizeof(In) == sizeof(Out)) {
    return v;
  } else if constexpr (sizeof(In) > sizeof(Out)) {
    return uint32_t(v) >> 8;
  } else {
    return uint32_t(v) * 257;
  }
}

// Reads one source pixel as (R, G, B, A) at the output depth; A is the maximum when absent.
template <typename In, typename Out>
inline void read_rgba(const In* p, int channels, uint32_t (&v)[4]) {
  constexpr uint32_t opaque = sizeof(Out) == 1 ? 0xFF : 0xFFFF;
  switch (channels) {
    case 1: v[0] = v[1] = v[2] = at_depth<In, Out>(p[0]); v[3] = opaque; break;
    case 2: v[0] = v[1] = v[2] = at_depth<In, Out>(p[0]); v[3] = at_depth<In, Out>(p[1]); break;
    case 3:
      v[0] = at_depth<In, Out>(p[0]), v[1] = at_depth<In, Out>(p[1]), v[2] = at_depth<In, Out>(p[2]);
      v[3] = opaque;
      break;
    default:
      v[0] = at_depth<In, Out>(p[0]), v[1] = at_depth<In, Out>(p[1]), v[2] = at_depth<In, Out>(p[2]);
      v[3] = at_depth<In, Out>(p[3]);
      break;
  }
}

// Samples are first brought to the output depth, then converted at that depth (so GRAY of a 16-bit colour
// image at 8 bit equals GRAY of its 8-bit RGB output, as in Pillow).
template <typename In, typename Out>
void convert(const CanonicalImage& src, ColorMode mode, int out_channels, uint8_t* dst) {
  const bool gray_src = src.channels <= 2;
  const bool gray_out = mode == ColorMode::GRAY || mode == ColorMode::GRAY_ALPHA;
  for (int y = 0; y < src.height; ++y) {
    const In* s = reinterpret_cast<const In*>(src.data + y * src.row_bytes);
    Out* d = reinterpret_cast<Out*>(dst + int64_t(y) * src.width * out_channels * int64_t(sizeof(Out)));
    for (int x = 0; x < src.width; ++x, s += src.channels, d += out_channels) {
      uint32_t v[4];
      read_rgba<In, Out>(s, src.channels, v);
      if (mode == ColorMode::UNCHANGED) {
        for (int c = 0; c < out_channels; ++c) d[c] = Out(at_depth<In, Out>(s[c]));
      } else if (gray_out) {
        d[0] = Out(gray_src ? v[0] : luma(v[0], v[1], v[2]));
        if (out_channels == 2) d[1] = Out(v[3]);
      } else {
        for (int c = 0; c < out_channels; ++c) d[c] = Out(v[c]);
      }
    }
  }
}

}  // namespace

ImageShape output_shape(const CanonicalImage& src, ColorMode mode, BitDepth depth) {
  ImageShape s;
  s.height = src.height;
  s.width = src.width;
  switch (mode) {
    case ColorMode::RGB: s.channels = 3; break;
    case ColorMode::RGBA: s.channels = 4; break;
    case ColorMode::GRAY: s.channels = 1; break;
    case ColorMode::GRAY_ALPHA: s.channels = 2; break;
    case ColorMode::UNCHANGED: s.channels = src.channels; break;
  }
  switch (depth) {
    case BitDepth::Source: s.type = mode == ColorMode::UNCHANGED ? src.type : ElemType::UInt8; break;
    case BitDepth::Eight: s.type = ElemType::UInt8; break;
    case BitDepth::Sixteen: s.type = ElemType::UInt16; break;
  }
  return s;
}

void convert_channels(const CanonicalImage& src, ColorMode mode, uint8_t* dst, BitDepth depth) {
  const ImageShape out = output_shape(src, mode, depth);
  if (mode == ColorMode::UNCHANGED && out.type == src.type) {
    for (int y = 0; y < src.height; ++y) {
      std::memcpy(dst + y * out.row_bytes(), src.data + y * src.row_bytes, size_t(out.row_bytes()));
    }
    return;
  }
  const bool wide_in = src.type == ElemType::UInt16, wide_out = out.type == ElemType::UInt16;
  if (wide_in && wide_out) {
    convert<uint16_t, uint16_t>(src, mode, out.channels, dst);
  } else if (wide_in) {
    convert<uint16_t, uint8_t>(src, mode, out.channels, dst);
  } else if (wide_out) {
    convert<uint8_t, uint16_t>(src, mode, out.channels, dst);
  } else {
    convert<uint8_t, uint8_t>(src, mode, out.channels, dst);
  }
}

}  // namespace spdl_torch::core
