// SPDX-License-Identifier: BSD-3-Clause
// Point-wise colour kernels: brightness, contrast, saturation, hue, grayscale, invert, posterize, solarize.
// Float32 arithmetic in torchvision's order; `.to(uint8)` truncates toward zero after the clamp. The
// per-pixel kernels share one row loop (for_each_row) that splits each row into planar float channels, so GCC
// vectorises them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/simd.h"

namespace spdl_torch::core::augment {
namespace {

inline uint8_t clamp_trunc(float v) { return uint8_t(std::min(std::max(v, 0.0f), 255.0f)); }

// r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114) (ATen's add with alpha: a fused multiply-add).
inline float gray_value(float r, float g, float b) { return fma_exact(b, 0.114f, fma_exact(g, 0.587f, r * 0.2989f)); }

// One row of interleaved RGB bytes as three planar float rows (rgb: 3 * width floats, r | g | b).
inline void split_row(const uint8_t* src, int64_t width, float* rgb) {
  float *r = rgb, *g = rgb + width, *b = rgb + 2 * width;
  for (int64_t x = 0; x < width; ++x) {
    r[x] = float(src[3 * x]), g[x] = float(src[3 * x + 1]), b[x] = float(src[3 * x + 2]);
  }
}

// The row loop of the per-pixel kernels: each row of the image split into planar float rows r, g, b (width floats
// each), then `pixels(r, g, b, out)`. Kernels that write (kWrites) put the row's new interleaved bytes in `out`, a
// buffer of its own (its stores alias neither the planes nor the image), which then replaces the row; the others
// only read (`out` is null).
template <bool kWrites, typename Pixels>
inline void for_each_row(const RgbImage& img, Pixels pixels) {
  const int64_t w = img.width;
  std::vector<float> rgb(size_t(3 * w));
  std::vector<uint8_t> out(kWrites ? size_t(3 * w) : 0);
  for (int64_t y = 0; y < img.height; ++y) {
    uint8_t* row = img.data + y * w * 3;
    split_row(row, w, rgb.data());
    pixels(rgb.data(), rgb.data() + w, rgb.data() + 2 * w, kWrites ? out.data() : nullptr);
    if (kWrites) std::copy(out.begin(), out.end(), row);
  }
}

// _blend(image, other, ratio): image.mul(ratio).add_(other, alpha=1 - ratio).clamp_(0, 255), truncated.
struct Blend {
  float ratio, alpha;
  explicit Blend(float r) : ratio(r), alpha(float(1.0 - double(r))) {}
  uint8_t operator()(uint8_t v, float other) const { return clamp_trunc(std::fma(other, alpha, float(v) * ratio)); }
};

// A point op through its 256-entry table (the same values as the op per pixel, faster).
template <typename Fn>
void apply_table(const RgbImage& img, Fn fn) {
  uint8_t lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = fn(uint8_t(v));
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels() * 3; i < n; ++i) p[i] = lut[p[i]];
}

// The sum over the image of floor(grey) (exact in double: whole numbers).
SPDL_TORCH_AUGMENT_CLONES
double gray_floor_sum(const RgbImage& img) {
  const int64_t w = img.width;
  double sum = 0;
  for_each_row<false>(img, [&](const float* r, const float* g, const float* b, uint8_t*) {
    int64_t row_sum = 0;
    for (int64_t x = 0; x < w; ++x) row_sum += int64_t(gray_value(r[x], g[x], b[x]));
    sum += double(row_sum);
  });
  return sum;
}

}  // namespace

void adjust_brightness(const RgbImage& img, float factor) {
  apply_table(img, [factor](uint8_t v) { return clamp_trunc(float(v) * factor); });
}

void adjust_contrast(const RgbImage& img, float factor) {
  // mean of floor(grey) over the image (float32 in torch; the sum of integers is exact here in double)
  const double sum = gray_floor_sum(img);
  const float mean = float(sum / double(img.pixels()));
  const Blend blend(factor);
  apply_table(img, [&](uint8_t v) { return blend(v, mean); });
}

SPDL_TORCH_AUGMENT_CLONES
void adjust_saturation(const RgbImage& img, float factor) {
  // _blend(image, grey, factor) per pixel: fma(grey, 1 - factor, v * factor), clamped, truncated.
  const float ratio = factor, alpha = float(1.0 - double(factor));
  const int64_t w = img.width;
  for_each_row<true>(img, [&](const float* r, const float* g, const float* b, uint8_t* out) {
    for (int64_t x = 0; x < w; ++x) {
      const float grey = floor_nonneg(gray_value(r[x], g[x], b[x]));
      const float o0 = fma_exact(grey, alpha, r[x] * ratio);
      const float o1 = fma_exact(grey, alpha, g[x] * ratio);
      const float o2 = fma_exact(grey, alpha, b[x] * ratio);
      out[3 * x] = uint8_t(int32_t(std::min(std::max(o0, 0.0f), 255.0f)));
      out[3 * x + 1] = uint8_t(int32_t(std::min(std::max(o1, 0.0f), 255.0f)));
      out[3 * x + 2] = uint8_t(int32_t(std::min(std::max(o2, 0.0f), 255.0f)));
    }
  });
}

SPDL_TORCH_AUGMENT_CLONES
void adjust_hue(const RgbImage& img, float hue_factor) {
  const float inv255 = float(1.0 / 255.0);
  const float to_u8 = float(255.0 + 1.0 - 1e-3);  // to_dtype(float32 -> uint8, scale=True)
  const float sixth = float(1.0 / 6.0);
  const int64_t w = img.width;
  for_each_row<true>(img, [&](const float* pr, const float* pg, const float* pb, uint8_t* out) {
    for (int64_t x = 0; x < w; ++x) {
      const float r = pr[x] * inv255, g = pg[x] * inv255, b = pb[x] * inv255;
      // _rgb_to_hsv
      const float maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
      const bool eqc = maxc == minc;
      const float range = maxc - minc;
      const float s = range / (eqc ? 1.0f : maxc);
      const float div = eqc ? 1.0f : range;
      const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
      const bool max_is_r = maxc == r, max_is_g = maxc == g;
      const float hg = (max_is_g && !max_is_r) ? (rc + 2.0f) - bc : 0.0f;
      const float hr = max_is_r ? bc - gc : 0.0f;
      const float hb = (!max_is_r && !max_is_g) ? (gc + 4.0f) - rc : 0.0f;
      // fmod(., 1) of a value in [5/6, 11/6]: minus its (exact) whole part
      float h = (hr + hg + hb) * sixth + 1.0f;
      h = h - float(int32_t(h));
      // h.add_(hue_factor).remainder_(1.0): fmod (h in [-0.5, 1.5], truncation toward zero), + 1 if negative
      h = h + hue_factor;
      h = h - float(int32_t(h));
      h = h < 0 ? h + 1.0f : h;
      // _hsv_to_rgb
      const float v = maxc;
      const float h6 = h * 6.0f;
      const float fi = floor_nonneg(h6);
      const float f = h6 - fi;
      int32_t sector = int32_t(fi);
      sector = sector >= 6 ? sector - 6 : sector;
      const float sxf = s * f;
      const float one_minus_s = 1.0f - s;
      const float q = std::min(std::max((1.0f - sxf) * v, 0.0f), 1.0f);
      const float t = std::min(std::max((sxf + one_minus_s) * v, 0.0f), 1.0f);
      const float p = std::min(std::max(one_minus_s * v, 0.0f), 1.0f);
      // sector 0: v t p, 1: q v p, 2: p v t, 3: p q v, 4: t p v, 5: v p q
      const float ro = (sector == 0 || sector == 5) ? v : sector == 1 ? q : sector == 4 ? t : p;
      const float go = sector == 0 ? t : (sector == 1 || sector == 2) ? v : sector == 3 ? q : p;
      const float bo = (sector == 0 || sector == 1) ? p : sector == 2 ? t : sector == 5 ? q : v;
      out[3 * x] = uint8_t(int32_t(ro * to_u8));
      out[3 * x + 1] = uint8_t(int32_t(go * to_u8));
      out[3 * x + 2] = uint8_t(int32_t(bo * to_u8));
    }
  });
}

void posterize(const RgbImage& img, int bits) {
  if (bits >= 8) return;
  const uint8_t mask = uint8_t(((1u << bits) - 1u) << (8 - bits));
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels() * 3; i < n; ++i) p[i] &= mask;
}

void solarize(const RgbImage& img, float threshold) {
  apply_table(img, [threshold](uint8_t v) { return float(v) >= threshold ? uint8_t(255 - v) : v; });
}

void solarize_add(const RgbImage& img, int add, float threshold) {
  apply_table(img, [add, threshold](uint8_t v) { return float(v) < threshold ? uint8_t(std::min(255, v + add)) : v; });
}

void invert(const RgbImage& img) {
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels() * 3; i < n; ++i) p[i] = uint8_t(255 - p[i]);
}

SPDL_TORCH_AUGMENT_CLONES
void rgb_to_grayscale(const RgbImage& img) {
  const int64_t w = img.width;
  for_each_row<true>(img, [&](const float* r, const float* g, const float* b, uint8_t* out) {
    for (int64_t x = 0; x < w; ++x) {
      const uint8_t v = uint8_t(int32_t(gray_value(r[x], g[x], b[x])));
      out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v;
    }
  });
}

template <>
void run_op<Code::AdjustBrightness>(const RgbImage& img, const Args& a, ProgramState&) {
  adjust_brightness(img, a.real("brightness_factor"));
}

template <>
void run_op<Code::AdjustContrast>(const RgbImage& img, const Args& a, ProgramState&) {
  adjust_contrast(img, a.real("contrast_factor"));
}

template <>
void run_op<Code::AdjustSaturation>(const RgbImage& img, const Args& a, ProgramState&) {
  adjust_saturation(img, a.real("saturation_factor"));
}

template <>
void run_op<Code::AdjustHue>(const RgbImage& img, const Args& a, ProgramState&) {
  adjust_hue(img, a.real("hue_factor"));
}

template <>
void run_op<Code::Posterize>(const RgbImage& img, const Args& a, ProgramState&) {
  posterize(img, a.integer("bits"));
}

template <>
void run_op<Code::Solarize>(const RgbImage& img, const Args& a, ProgramState&) {
  solarize(img, a.real("threshold"));
}

template <>
void run_op<Code::SolarizeAdd>(const RgbImage& img, const Args& a, ProgramState&) {
  solarize_add(img, a.integer("add"), a.real("threshold"));
}

template <>
void run_op<Code::Invert>(const RgbImage& img, const Args&, ProgramState&) {
  invert(img);
}

template <>
void run_op<Code::RgbToGrayscale>(const RgbImage& img, const Args&, ProgramState&) {
  rgb_to_grayscale(img);
}

}  // namespace spdl_torch::core::augment
