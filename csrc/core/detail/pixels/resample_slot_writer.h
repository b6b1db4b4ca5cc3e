// SPDX-License-Identifier: BSD-3-Clause
// Writing resampled rows into a batch slot (SlotWriter) in its dtype and layout, with the normalization
// fused; shared by the generic and the AVX2 resample kernels. Inline: the kernels' inner row loops.
#pragma once

#include <cstdint>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "core/resample.h"

namespace spdl_torch::core::detail {

// Writes one output row of 8-bit values (already rounded; pixel x of channel c at
// values[c * channel_stride + x * pixel_stride]) into the slot.
template <typename T, typename Convert>
inline void write_row(const float* values, int64_t channel_stride, int64_t pixel_stride, int64_t y, const SlotWriter& out,
               Convert convert) {
  // Locals: stores through uint8_t* may alias `out`, which would reload its fields every iteration.
  T* const row = reinterpret_cast<T*>(out.data) + y * out.stride_h;
  const int ch = out.channels;
  const int64_t width = out.width, stride_w = out.stride_w, stride_c = out.stride_c;
  for (int c = 0; c < ch; ++c) {
    T* const dst = row + c * stride_c;
    const float* v = values + c * channel_stride;
    if (stride_w == 1) {
      for (int64_t x = 0; x < width; ++x) dst[x] = convert(v[x * pixel_stride], c);
    } else {
      for (int64_t x = 0; x < width; ++x) dst[x * stride_w] = convert(v[x * pixel_stride], c);
    }
  }
}

// write_row in the slot's dtype: uint8 as is, float32 / bfloat16 normalized (v * mul + add).
inline void write_values_row(const float* values, int64_t channel_stride, int64_t pixel_stride, int64_t y,
                      const SlotWriter& out, const float* mul, const float* add) {
  switch (out.type) {
    case OutType::UInt8:
      write_row<uint8_t>(values, channel_stride, pixel_stride, y, out, [](float v, int) { return uint8_t(v); });
      break;
    case OutType::Float32:
      write_row<float>(values, channel_stride, pixel_stride, y, out,
                       [&](float v, int c) { return v * mul[c] + add[c]; });
      break;
    case OutType::BFloat16:
      write_row<uint16_t>(values, channel_stride, pixel_stride, y, out,
                          [&](float v, int c) { return float_to_bfloat16_bits(v * mul[c] + add[c]); });
      break;
  }
}

// Float32 planar rows (stride_w 1) from RGBx pixels 4 floats apart: 4 pixels at a time, transposed to
// 4 R, 4 G, 4 B values, normalized and stored with one vector store per plane.
inline void write_rgb_planar_f32(const float* values, int64_t y, const SlotWriter& out, const float* mul,
                                 const float* add) {
  float* const r = reinterpret_cast<float*>(out.data) + y * out.stride_h;
  float* const g = r + out.stride_c;
  float* const b = g + out.stride_c;
  const int64_t width = out.width;
  int64_t x = 0;
#if defined(__SSE__)
  const __m128 mr = _mm_set1_ps(mul[0]), mg = _mm_set1_ps(mul[1]), mb = _mm_set1_ps(mul[2]);
  const __m128 ar = _mm_set1_ps(add[0]), ag = _mm_set1_ps(add[1]), ab = _mm_set1_ps(add[2]);
  for (; x + 4 <= width; x += 4) {
    __m128 p0 = _mm_loadu_ps(values + 4 * x), p1 = _mm_loadu_ps(values + 4 * x + 4);
    __m128 p2 = _mm_loadu_ps(values + 4 * x + 8), p3 = _mm_loadu_ps(values + 4 * x + 12);
    _MM_TRANSPOSE4_PS(p0, p1, p2, p3);
    _mm_storeu_ps(r + x, _mm_add_ps(_mm_mul_ps(p0, mr), ar));
    _mm_storeu_ps(g + x, _mm_add_ps(_mm_mul_ps(p1, mg), ag));
    _mm_storeu_ps(b + x, _mm_add_ps(_mm_mul_ps(p2, mb), ab));
  }
#endif
  for (; x < width; ++x) {
    r[x] = values[4 * x] * mul[0] + add[0];
    g[x] = values[4 * x + 1] * mul[1] + add[1];
    b[x] = values[4 * x + 2] * mul[2] + add[2];
  }
}

// Throws InternalError unless the windows fit the source and the slot (1..4 channels).
void check_resample_args(int64_t src_height, int64_t src_width, int64_t src_row_bytes, const AxisWeights& wy,
                         const AxisWeights& wx, const SlotWriter& out);

// (v / 255 - mean) / std == v * mul + add, per channel (4 entries each).
void normalization(const SlotWriter& out, float* mul, float* add);

}  // namespace spdl_torch::core::detail
