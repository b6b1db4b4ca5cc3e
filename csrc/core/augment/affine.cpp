// SPDX-License-Identifier: BSD-3-Clause
// Affine warp (rotate, translate, shear; scale 1) as torchvision's v2 affine_image: the inverse matrix of
// _get_inverse_affine_matrix (double), then _affine_grid and grid_sample(align_corners=False, zeros
// padding) in float32, the fill mask blend of _apply_grid_transform, round half to even.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/scratch.h"
#include "core/augment/simd.h"

namespace spdl_torch::core::augment {
namespace {

constexpr double kPi = 3.14159265358979323846;

double radians(double deg) { return deg * kPi / 180.0; }

}  // namespace

SPDL_TORCH_AUGMENT_CLONES
void affine(const RgbImage& img, double angle, double tx, double ty, double shear_x, double shear_y, bool bilinear,
            float fill) {
  const int64_t h = img.height, w = img.width;
  // _get_inverse_affine_matrix(center=[0, 0], angle, [tx, ty], scale=1, [sx, sy])
  const double rot = radians(angle), sx = radians(shear_x), sy = radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -(a * std::tan(sx) + std::sin(rot));
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = std::cos(rot) - c * std::tan(sx);
  double m[6] = {d, -b, 0.0, -c, a, 0.0};
  m[2] += 0.0 - m[0] * tx - m[1] * ty;
  m[5] += 0.0 - m[3] * tx - m[4] * ty;
  // _affine_grid: theta (float32) transposed and divided by [0.5 w, 0.5 h]
  const float half_w = float(0.5 * double(w)), half_h = float(0.5 * double(h));
  const float t00 = float(m[0]) / half_w, t10 = float(m[1]) / half_w, t20 = float(m[2]) / half_w;
  const float t01 = float(m[3]) / half_h, t11 = float(m[4]) / half_h, t21 = float(m[5]) / half_h;
  // grid_sample's unnormalize (align_corners=False): (g + 1) * size / 2 - 0.5
  const float scale_x = float(w) / 2.0f, scale_y = float(h) / 2.0f;
  const bool masked = fill >= 0;
  const float fill_value = masked ? fill : 0.0f;
  const int64_t row = w * 3;
  ScratchBuffer<uint8_t, struct AffineSource> source;
  std::vector<uint8_t>& src = *source;
  src.assign(img.data, img.data + h * row);
  auto at = [&](int64_t y, int64_t x) { return src.data() + y * row + x * 3; };
  auto inside = [&](int64_t y, int64_t x) { return y >= 0 && y < h && x >= 0 && x < w; };
  const float cx = float(double(w - 1) * 0.5), cy = float(double(h - 1) * 0.5);
  const uint8_t fill_byte = uint8_t(std::nearbyint(fill_value));
  for (int64_t oy = 0; oy < h; ++oy) {
    const float by = float(oy) - cy;
    uint8_t* dst = img.data + oy * row;
    for (int64_t ox = 0; ox < w; ++ox) {
      const float bx = float(ox) - cx;
      const float gx = bx * t00 + by * t10 + t20;
      const float gy = bx * t01 + by * t11 + t21;
      const float ix = (gx + 1.0f) * scale_x - 0.5f;
      const float iy = (gy + 1.0f) * scale_y - 0.5f;
      uint8_t* out = dst + ox * 3;
      if (!bilinear) {
        const float rx = round_even(ix), ry = round_even(iy);
        const bool in = rx >= 0 && rx < float(w) && ry >= 0 && ry < float(h);
        if (in) {
          const uint8_t* p = at(int64_t(ry), int64_t(rx));
          out[0] = p[0], out[1] = p[1], out[2] = p[2];
        } else {
          out[0] = out[1] = out[2] = fill_byte;
        }
        continue;
      }
      if (!(ix >= -1.0f && ix < float(w) && iy >= -1.0f && iy < float(h))) {  // no corner inside
        out[0] = out[1] = out[2] = fill_byte;
        continue;
      }
      // floor from the truncation (the values are small here)
      const float tx_ = float(int32_t(ix)), ty_ = float(int32_t(iy));
      const float x_w = tx_ > ix ? tx_ - 1.0f : tx_, y_n = ty_ > iy ? ty_ - 1.0f : ty_;
      const float dw = ix - x_w, de = 1.0f - dw, dn = iy - y_n, ds = 1.0f - dn;
      const float wnw = ds * de, wne = ds * dw, wsw = dn * de, wse = dn * dw;
      const int64_t x0 = int64_t(x_w), y0 = int64_t(y_n);
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < w && y0 + 1 < h) {  // all four corners inside
        const float mask = ((wnw + wne) + wsw) + wse;
        const uint8_t* pn = at(y0, x0);
        const uint8_t* ps = pn + row;
        for (int ch = 0; ch < 3; ++ch) {
          float v = float(pn[ch]) * wnw + float(pn[ch + 3]) * wne + float(ps[ch]) * wsw + float(ps[ch + 3]) * wse;
          if (masked) v = (v - fill_value) * mask + fill_value;
          out[ch] = uint8_t(int32_t(std::min(std::max(round_even(v), 0.0f), 255.0f)));
        }
        continue;
      }
      const bool inw = inside(y0, x0), ine = inside(y0, x0 + 1), isw = inside(y0 + 1, x0), ise = inside(y0 + 1, x0 + 1);
      const float mask = (inw ? wnw : 0.0f) + (ine ? wne : 0.0f) + (isw ? wsw : 0.0f) + (ise ? wse : 0.0f);
      for (int ch = 0; ch < 3; ++ch) {
        const float vnw = inw ? float(at(y0, x0)[ch]) : 0.0f;
        const float vne = ine ? float(at(y0, x0 + 1)[ch]) : 0.0f;
        const float vsw = isw ? float(at(y0 + 1, x0)[ch]) : 0.0f;
        const float vse = ise ? float(at(y0 + 1, x0 + 1)[ch]) : 0.0f;
        float v = vnw * wnw + vne * wne + vsw * wsw + vse * wse;
        if (masked) v = (v - fill_value) * mask + fill_value;
        out[ch] = uint8_t(int32_t(std::min(std::max(round_even(v), 0.0f), 255.0f)));
      }
    }
  }
}

template <>
void run_op<Code::Affine>(const RgbImage& img, const Args& a, ProgramState&) {
  constexpr int kBilinear = choice_index(Code::Affine, "interpolation", "bilinear");
  affine(img, a.real("angle"), a.real("translate", 0), a.real("translate", 1), a.real("shear", 0), a.real("shear", 1),
         a.choice("interpolation") == kBilinear, a.real("fill"));
}

}  // namespace spdl_torch::core::augment
