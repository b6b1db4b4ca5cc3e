// SPDX-License-Identifier: BSD-3-Clause
// Pillow's colour rules, what torchvision's transforms do to a PIL image (not torchvision's tensor kernels):
//
// * pil_enhance: ImageEnhance.<Brightness | Color | Contrast | Sharpness>(img).enhance(factor), i.e.
//   Image.blend(degenerate, img, factor) (ImagingBlend: trunc(d + alpha (v - d)) in float32 with alpha the
//   float32 factor, clipped to 0..255 when extrapolating). The degenerate image: black; Pillow's convert("L")
//   ((19595 R + 38470 G + 7471 B + 0x8000) >> 16) per pixel; int(mean of that L image + 0.5) (ImageStat's mean
//   in double); ImageFilter.SMOOTH (3x3 [1 1 1; 1 5 1; 1 1 1] / 13 in float32 from 0.5, truncated; the border
//   rows and columns, and an image under 3 x 3, kept).
// * pil_hue: torchvision's PIL adjust_hue: img.convert("HSV") (Convert.c's rgb2hsv), H += shift modulo 256,
//   .convert("RGB") (hsv2rgb), with Convert.c's float / double arithmetic step for step.
// * pil_autocontrast: ImageOps.autocontrast(img) (cutoff 0): per channel lo / hi = the lowest / highest value
//   present, v -> clamp(int(v * scale + offset), 0, 255), scale = 255 / (hi - lo), offset = -lo * scale in
//   double; a channel with hi <= lo unchanged.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/simd.h"

namespace spdl_torch::core::augment {
namespace {

// ImagingBlend of one value: d + alpha * (v - d) in float32 (the int difference converted to float first),
// then truncated; <= 0 -> 0, >= 255 -> 255 (only extrapolation reaches them): the clamp gives the same.
inline uint8_t blend(int d, int v, float alpha) {
  const float t = float(d) + alpha * float(v - d);
  return uint8_t(int32_t(std::min(std::max(t, 0.0f), 255.0f)));
}

// Pillow's convert("L") of one RGB pixel (Convert.c, L24).
inline int luma(const uint8_t* p) { return int((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16); }

inline int clip8(int v) { return v <= 0 ? 0 : v < 256 ? v : 255; }

// ImagingFilter3x3 with SMOOTH, then the blend, over the inner values of one row (interleaved offsets 3 ..
// row - 4; rows up / mid / down of the source): the kernel in float32 (1 / 13, 5 / 13), summed from the offset
// 0.5 row by row (below, middle, above: the kernel flipped), each row left to right, then truncated (clip8).
SPDL_TORCH_AUGMENT_CLONES
void sharpen_row(const uint8_t* __restrict up, const uint8_t* __restrict mid, const uint8_t* __restrict down,
                 uint8_t* __restrict dst, int64_t row, float alpha) {
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  for (int64_t i = 3; i < row - 3; ++i) {
    float ss = 0.5f;
    ss += float(down[i - 3]) * k1 + float(down[i]) * k1 + float(down[i + 3]) * k1;
    ss += float(mid[i - 3]) * k1 + float(mid[i]) * k5 + float(mid[i + 3]) * k1;
    ss += float(up[i - 3]) * k1 + float(up[i]) * k1 + float(up[i + 3]) * k1;
    const float d = floor_nonneg(ss);                 // ss in [0.5, 255.6): clip8's clamp changes nothing
    const float t = d + alpha * (float(mid[i]) - d);  // the int difference, exact in float
    dst[i] = uint8_t(int32_t(std::min(std::max(t, 0.0f), 255.0f)));
  }
}

void enhance_sharpness(const RgbImage& img, float alpha) {
  const int64_t h = img.height, w = img.width;
  if (h < 3 || w < 3) return;  // Pillow's filter copies a smaller image: the blend keeps it
  const int64_t row = w * 3;
  // Rows y - 1 and y of the source, kept aside as y is overwritten.
  std::vector<uint8_t> prev(img.data, img.data + row);
  std::vector<uint8_t> cur(static_cast<size_t>(row));
  for (int64_t y = 1; y < h - 1; ++y) {
    std::copy(img.data + y * row, img.data + (y + 1) * row, cur.begin());
    sharpen_row(prev.data(), cur.data(), img.data + (y + 1) * row, img.data + y * row, row, alpha);
    prev.swap(cur);
  }
}

// ImageStat.Stat(img.convert("L")).mean[0] rounded as ImageEnhance.Contrast does: int(mean + 0.5); the sum of
// the L values is ImageStat's sum over its histogram (whole numbers: exact, as Python's int sum).
SPDL_TORCH_AUGMENT_CLONES
int mean_luma(const RgbImage& img) {
  const uint8_t* p = img.data;
  uint64_t sum = 0;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) sum += uint32_t(luma(p + 3 * i));
  return int(double(sum) / double(img.pixels()) + 0.5);
}

SPDL_TORCH_AUGMENT_CLONES
void enhance_color(const RgbImage& img, float alpha) {
  uint8_t* __restrict p = img.data;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i) {
    const int d = luma(p + 3 * i);
    for (int c = 0; c < 3; ++c) p[3 * i + c] = blend(d, p[3 * i + c], alpha);
  }
}

// Convert.c's rgb2hsv_row.
inline void rgb_to_hsv(const uint8_t* p, uint8_t* hsv) {
  const uint8_t r = p[0], g = p[1], b = p[2];
  const uint8_t maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
  hsv[2] = maxc;
  if (minc == maxc) {
    hsv[0] = hsv[1] = 0;
    return;
  }
  const float cr = float(maxc - minc);
  const float s = cr / float(maxc);
  const float rc = float(maxc - r) / cr, gc = float(maxc - g) / cr, bc = float(maxc - b) / cr;
  float hue;
  if (r == maxc) {
    hue = bc - gc;
  } else if (g == maxc) {
    hue = float(2.0 + double(rc) - double(bc));
  } else {
    hue = float(4.0 + double(gc) - double(rc));
  }
  const double turn = double(hue) / 6.0 + 1.0;  // in [5/6, 11/6): fmod(turn, 1) is turn - 1 above 1, exactly
  hue = float(turn >= 1.0 ? turn - 1.0 : turn);
  hsv[0] = uint8_t(clip8(int(double(hue) * 255.0)));
  hsv[1] = uint8_t(clip8(int(double(s) * 255.0)));
}

// Convert.c's hsv2rgb of one pixel.
inline void hsv_to_rgb(uint8_t h, uint8_t s, uint8_t v, uint8_t* out) {
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = int(double(float(h)) * 6.0 / 255.0);  // 0..6 (floor: the value is >= 0)
  const float f = float(double(float(h)) * 6.0 / 255.0 - double(float(i)));
  const float fs = float(double(float(s)) / 255.0);
  const double fv = double(float(v));
  const uint8_t up = uint8_t(clip8(int(std::round(fv * (1.0 - double(fs))))));
  const uint8_t uq = uint8_t(clip8(int(std::round(fv * (1.0 - double(fs * f))))));
  const uint8_t ut = uint8_t(clip8(int(std::round(fv * (1.0 - double(fs) * (1.0 - double(f)))))));
  switch (i % 6) {
    case 0: out[0] = v, out[1] = ut, out[2] = up; break;
    case 1: out[0] = uq, out[1] = v, out[2] = up; break;
    case 2: out[0] = up, out[1] = v, out[2] = ut; break;
    case 3: out[0] = up, out[1] = uq, out[2] = v; break;
    case 4: out[0] = ut, out[1] = up, out[2] = v; break;
    default: out[0] = v, out[1] = up, out[2] = uq; break;
  }
}

}  // namespace

void pil_enhance(const RgbImage& img, Enhancer enhancer, float factor) {
  uint8_t* p = img.data;
  const int64_t n = img.pixels();
  switch (enhancer) {
    case Enhancer::Brightness:
    case Enhancer::Contrast: {
      const int d = enhancer == Enhancer::Contrast ? mean_luma(img) : 0;
      uint8_t lut[256];
      for (int v = 0; v < 256; ++v) lut[v] = blend(d, v, factor);
      for (int64_t i = 0; i < n * 3; ++i) p[i] = lut[p[i]];
      return;
    }
    case Enhancer::Color: return enhance_color(img, factor);
    case Enhancer::Sharpness: return enhance_sharpness(img, factor);
  }
}

void pil_hue(const RgbImage& img, int shift) {
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i, p += 3) {
    uint8_t hsv[3];
    rgb_to_hsv(p, hsv);
    hsv_to_rgb(uint8_t(hsv[0] + shift), hsv[1], hsv[2], p);
  }
}

void pil_autocontrast(const RgbImage& img) {
  uint8_t lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
  const uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i, p += 3) {
    for (int c = 0; c < 3; ++c) lo[c] = std::min(lo[c], p[c]), hi[c] = std::max(hi[c], p[c]);
  }
  uint8_t lut[3][256];
  for (int c = 0; c < 3; ++c) {
    const double scale = hi[c] > lo[c] ? 255.0 / double(hi[c] - lo[c]) : 0.0;
    const double offset = -double(lo[c]) * scale;
    for (int v = 0; v < 256; ++v) {
      lut[c][v] = hi[c] > lo[c] ? uint8_t(std::clamp(int(double(v) * scale + offset), 0, 255)) : uint8_t(v);
    }
  }
  uint8_t* q = img.data;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i, q += 3)
    q[0] = lut[0][q[0]], q[1] = lut[1][q[1]], q[2] = lut[2][q[2]];
}

template <>
void run_op<Code::PilEnhance>(const RgbImage& img, const Args& a, ProgramState&) {
  pil_enhance(img, Enhancer(a.choice("enhancer")), a.real("factor"));
}

template <>
void run_op<Code::PilHue>(const RgbImage& img, const Args& a, ProgramState&) {
  pil_hue(img, a.integer("shift"));
}

template <>
void run_op<Code::PilAutocontrast>(const RgbImage& img, const Args&, ProgramState&) {
  pil_autocontrast(img);
}

}  // namespace spdl_torch::core::augment
