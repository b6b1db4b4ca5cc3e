// SPDX-License-Identifier: BSD-3-Clause
// resample_into_generic: the portable resample kernel (any channel count), the reference of the AVX2 one.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/detail/pixels/resample_slot_writer.h"
#include "core/resample.h"

namespace spdl_torch::core {

using namespace detail;  // the slot writer

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
// An AVX2 clone picked at load time where the CPU has it (the u8 -> float vertical pass is 8 lanes wide).
#define SPDL_TORCH_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPDL_TORCH_TARGET_CLONES
#endif

namespace {

// Grey values of one row of RGB pixels `stride` floats apart (values 0..255, whole numbers).
void gray_row(const float* rgb, int64_t stride, int64_t width, GrayRule rule, float* out) {
  for (int64_t x = 0; x < width; ++x) {
    const float* p = rgb + x * stride;
    if (rule == GrayRule::Pillow) {
      const uint32_t l = uint32_t(p[0]) * 19595u + uint32_t(p[1]) * 38470u + uint32_t(p[2]) * 7471u + 0x8000u;
      out[x] = float(l >> 16);
    } else {  // torchvision: r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114), then .to(uint8)
      float l = p[0] * 0.2989f;
      l = l + p[1] * 0.587f;
      l = l + p[2] * 0.114f;
      out[x] = float(int(std::min(l, 255.0f)));
    }
  }
}

}  // namespace

SPDL_TORCH_TARGET_CLONES
void resample_into_generic(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                           const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out) {
  const int ch = out.source_channels();
  check_resample_args(src_height, src_width, src_row_bytes, wy, wx, out);
  float mul[4], add[4];
  normalization(out, mul, add);
  // Per output row: the vertical pass over the columns the horizontal windows need (contiguous,
  // vectorizable), then the horizontal pass, rounding to the 8-bit value torchvision's uint8 resize gives.
  // Vertical first: the horizontal pass then runs on floats and only over output rows, ~1.5x faster than
  // horizontal first (timed with benchmarks/bench_decode_images.py).
  const int64_t col_lo = wx.src_lo * ch;
  const int64_t cols = (wx.src_hi - wx.src_lo) * ch;
  std::vector<float> column(size_t(std::max<int64_t>(cols, 1) + 1));  // +1: 4-lane loads of the last pixel
#if defined(__GNUC__)
  // Three channels: each output pixel is one 4-lane vector (R, G, B, unused), stored 4 floats apart.
  typedef float v4 __attribute__((vector_size(16)));
  typedef int32_t v4i __attribute__((vector_size(16)));
  const bool rgb_vectors = ch == 3;
#else
  const bool rgb_vectors = false;
#endif
  const int64_t vstride = rgb_vectors ? 4 : ch;
  std::vector<float> values(size_t(out.width * vstride));
  std::vector<float> gray(out.gray != GrayRule::None ? size_t(out.width) : 0);
  for (int64_t y = 0; y < out.height; ++y) {
    std::fill(values.begin(), values.end(), 0.0f);
    const int64_t n = wy.count[size_t(y)];
    if (n > 0 && cols > 0) {
      const float* w = &wy.weights[size_t(y * wy.taps)];
      float* col = column.data();
      {  // first tap assigns, the others accumulate
        const uint8_t* s = src + wy.start[size_t(y)] * src_row_bytes + col_lo;
        const float w0 = w[0];
        for (int64_t k = 0; k < cols; ++k) col[k] = w0 * float(s[k]);
      }
      for (int64_t j = 1; j < n; ++j) {
        const uint8_t* s = src + (wy.start[size_t(y)] + j) * src_row_bytes + col_lo;
        const float wj = w[j];
        for (int64_t k = 0; k < cols; ++k) col[k] += wj * float(s[k]);
      }
      if (rgb_vectors) {
#if defined(__GNUC__)
        // Four lanes per pixel (the 4th lane reads the next pixel's first value and is ignored), rounded
        // half up to 0..255 in the vector (no scalar stores that stall on the vector's store).
        const v4 zero = {0, 0, 0, 0}, top = {255, 255, 255, 255}, half = {0.5f, 0.5f, 0.5f, 0.5f};
        for (int64_t x = 0; x < out.width; ++x) {
          const int64_t m = wx.count[size_t(x)];
          if (m == 0) continue;  // padding: stays 0
          const float* wh = &wx.weights[size_t(x * wx.taps)];
          const float* p = col + (wx.start[size_t(x)] - wx.src_lo) * 3;
          v4 sum = zero;
          for (int64_t j = 0; j < m; ++j, p += 3) {
            v4 px;
            std::memcpy(&px, p, sizeof(px));
            sum += wh[j] * px;
          }
          sum = sum < zero ? zero : sum;
          sum = sum > top ? top : sum;
          const v4 rounded = __builtin_convertvector(__builtin_convertvector(sum + half, v4i), v4);
          std::memcpy(&values[size_t(x * 4)], &rounded, sizeof(rounded));
        }
#endif
      } else {
        col[cols] = 0.0f;
        for (int64_t x = 0; x < out.width; ++x) {
          const int64_t m = wx.count[size_t(x)];
          const float* wh = &wx.weights[size_t(x * wx.taps)];
          const float* p = col + (wx.start[size_t(x)] - wx.src_lo) * ch;
          float acc[4] = {0, 0, 0, 0};
          for (int64_t j = 0; j < m; ++j, p += ch)
            for (int c = 0; c < ch; ++c) acc[c] += wh[j] * p[c];
          // Round half up to 0..255 (no libm call in the hot loop).
          for (int c = 0; c < ch; ++c) values[size_t(x * ch + c)] = float(int(std::clamp(acc[c], 0.0f, 255.0f) + 0.5f));
        }
      }
    }
    // Padding pixels (window count 0) hold the value 0, normalized like any other value: torchvision's
    // CenterCrop pads the uint8 image with 0 before ToDtype/Normalize.
    if (out.gray != GrayRule::None) {  // the resized (rounded) RGB values -> grey, in every output channel
      gray_row(values.data(), vstride, out.width, out.gray, gray.data());
      write_values_row(gray.data(), 0, 1, y, out, mul, add);
    } else if (out.type == OutType::Float32 && vstride == 4 && ch == 3 && out.stride_w == 1) {
      write_rgb_planar_f32(values.data(), y, out, mul, add);
    } else {
      write_values_row(values.data(), 1, vstride, y, out, mul, add);
    }
  }
}

}  // namespace spdl_torch::core
