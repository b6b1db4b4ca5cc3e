// Point-wise colour kernels: brightness, contrast, saturation, hue, grayscale, invert, posterize, solarize.
// Float32 arithmetic in torchvision's order; `.to(uint8)` truncates toward zero after the clamp.
#include <algorithm>
#include <cmath>

#include "core/augment/kernels.h"

namespace spdl_torch::core::augment {
namespace {

inline uint8_t clamp_trunc(float v) { return uint8_t(std::min(std::max(v, 0.0f), 255.0f)); }

// r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114) (ATen's add with alpha: a fused multiply-add).
inline float gray_value(const uint8_t* p) {
  return std::fma(float(p[2]), 0.114f, std::fma(float(p[1]), 0.587f, float(p[0]) * 0.2989f));
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

}  // namespace

void adjust_brightness(const RgbImage& img, float factor) {
  apply_table(img, [factor](uint8_t v) { return clamp_trunc(float(v) * factor); });
}

void adjust_contrast(const RgbImage& img, float factor) {
  // mean of floor(grey) over the image (float32 in torch; the sum of integers is exact here in double)
  double sum = 0;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) sum += std::floor(gray_value(img.data + 3 * i));
  const float mean = float(sum / double(img.pixels()));
  const Blend blend(factor);
  apply_table(img, [&](uint8_t v) { return blend(v, mean); });
}

void adjust_saturation(const RgbImage& img, float factor) {
  const Blend blend(factor);
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) {
    uint8_t* p = img.data + 3 * i;
    const float g = std::floor(gray_value(p));
    p[0] = blend(p[0], g);
    p[1] = blend(p[1], g);
    p[2] = blend(p[2], g);
  }
}

void adjust_hue(const RgbImage& img, float hue_factor) {
  const float inv255 = float(1.0 / 255.0);
  const float to_u8 = float(255.0 + 1.0 - 1e-3);  // to_dtype(float32 -> uint8, scale=True)
  const float sixth = float(1.0 / 6.0);
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) {
    uint8_t* px = img.data + 3 * i;
    const float r = float(px[0]) * inv255, g = float(px[1]) * inv255, b = float(px[2]) * inv255;
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
    float h = std::fmod((hr + hg + hb) * sixth + 1.0f, 1.0f);
    // h.add_(hue_factor).remainder_(1.0)
    h = h + hue_factor;
    float m = std::fmod(h, 1.0f);
    if (m != 0 && m < 0) m += 1.0f;
    h = m;
    // _hsv_to_rgb
    const float v = maxc;
    const float h6 = h * 6.0f;
    const float fi = std::floor(h6);
    const float f = h6 - fi;
    int sector = int(fi) % 6;
    if (sector < 0) sector += 6;
    const float sxf = s * f;
    const float one_minus_s = 1.0f - s;
    const float q = std::clamp((1.0f - sxf) * v, 0.0f, 1.0f);
    const float t = std::clamp((sxf + one_minus_s) * v, 0.0f, 1.0f);
    const float p = std::clamp(one_minus_s * v, 0.0f, 1.0f);
    float ro, go, bo;
    switch (sector) {
      case 0: ro = v, go = t, bo = p; break;
      case 1: ro = q, go = v, bo = p; break;
      case 2: ro = p, go = v, bo = t; break;
      case 3: ro = p, go = q, bo = v; break;
      case 4: ro = t, go = p, bo = v; break;
      default: ro = v, go = p, bo = q; break;
    }
    px[0] = uint8_t(ro * to_u8);
    px[1] = uint8_t(go * to_u8);
    px[2] = uint8_t(bo * to_u8);
  }
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

void invert(const RgbImage& img) {
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels() * 3; i < n; ++i) p[i] = uint8_t(255 - p[i]);
}

void grayscale(const RgbImage& img) {
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) {
    uint8_t* p = img.data + 3 * i;
    p[0] = p[1] = p[2] = uint8_t(gray_value(p));
  }
}

}  // namespace spdl_torch::core::augment
