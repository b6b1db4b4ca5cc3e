// SPDX-License-Identifier: BSD-3-Clause
// Pillow's Image.transform(size, Image.AFFINE, data, resample, fillcolor=fill) with the output size equal to
// the input's, as Pillow computes it (src/libImaging/Geometry.c, ImagingTransformAffine and its engines):
//
// * every output pixel starts as the fill colour and keeps it where no source sample is taken;
// * NEAREST: three engines, as Pillow picks them: a "scale" one when b = d = 0 (column table from
//   x_k = c + a/2 + k a, row y_k = f + e/2 + k e, accumulated in double); a 16.16 fixed-point one when the
//   four corners map inside |coordinate| < 32768 (each coefficient rounded to 1/65536, accumulated in
//   integers, floored by the shift); else a double one accumulated per pixel. A sample at coordinate v is
//   source pixel floor(v) where 0 <= v < size (Pillow's COORD);
// * BILINEAR / BICUBIC: per pixel (u, v) = (a (x + 0.5) + b (y + 0.5) + c, d (x + 0.5) + e (y + 0.5) + f) in
//   double; outside [0, w) x [0, h) -> fill; else the 2x2 (4x4) neighbourhood of (u - 0.5, v - 0.5), its
//   columns clamped to the image and missing rows repeating the last one read, interpolated in double
//   (Pillow's cubic: p(d) = v1 + d (v2 - v0 + d (2 (v0 - v1) + v2 - v3 + d (v1 - v0 - v2 + v3))), rows first,
//   then columns), truncated to uint8 (bicubic clamped to 0..255 first).
//
// Where Pillow converts an out-of-range double to int (undefined behaviour there), the sample here is outside
// the image (the fill); the fixed-point accumulators are 64-bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/scratch.h"

namespace spdl_torch::core::augment {
namespace {

constexpr int kBilinear = choice_index(Code::PilAffine, "resample", "BILINEAR");
constexpr int kBicubic = choice_index(Code::PilAffine, "resample", "BICUBIC");

// Pillow's COORD(v) < size test and index: the source index of coordinate v, or -1 outside [0, size).
inline int64_t coord(double v, int64_t size) {
  if (!(v >= 0.0) || !(v < double(size))) return -1;
  return int64_t(v);
}

// Pillow's FIX(v): floor(v * 65536 + 0.5) (FLOOR: truncation for v >= 0, floor below).
inline int64_t fix16(double v) {
  const double s = v * 65536.0 + 0.5;
  return s < 0.0 ? int64_t(std::floor(s)) : int64_t(s);
}

// v >> 16 with the floor of an arithmetic shift for negative v.
inline int64_t shift16(int64_t v) { return v >= 0 ? v >> 16 : -((-v + 65535) >> 16); }

inline bool fits_fixed(const double* a, double x, double y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

inline int64_t clip(int64_t v, int64_t size) { return v < 0 ? 0 : v < size ? v : size - 1; }

// FLOOR(v) of Geometry.c for v in [-1, 2^31).
inline int64_t floor_small(double v) { return v < 0.0 ? int64_t(std::floor(v)) : int64_t(v); }

inline double cubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

inline uint8_t truncate_u8(double v) { return uint8_t(std::min(std::max(v, 0.0), 255.0)); }

struct Source {
  const uint8_t* data;
  int64_t h, w;
  const uint8_t* at(int64_t y, int64_t x) const { return data + (y * w + x) * 3; }
};

inline void put(uint8_t* out, const uint8_t* p) { out[0] = p[0], out[1] = p[1], out[2] = p[2]; }

void nearest_scale(const Source& s, uint8_t* dst, const double* a) {
  const int64_t h = s.h, w = s.w;
  std::vector<int64_t> xin(size_t(w), 0);
  int64_t xmin = w, xmax = 0;
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  for (int64_t x = 0; x < w; ++x) {
    const int64_t c = coord(xo, w);
    if (c >= 0) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
      xin[size_t(x)] = c;
    }
    xo += a[0];
  }
  for (int64_t y = 0; y < h; ++y) {
    const int64_t yi = coord(yo, h);
    if (yi >= 0) {
      uint8_t* out = dst + y * w * 3;
      for (int64_t x = xmin; x < xmax; ++x) put(out + x * 3, s.at(yi, xin[size_t(x)]));
    }
    yo += a[4];
  }
}

void nearest_fixed(const Source& s, uint8_t* dst, const double* a) {
  const int64_t h = s.h, w = s.w;
  const int64_t a0 = fix16(a[0]), a1 = fix16(a[1]), a3 = fix16(a[3]), a4 = fix16(a[4]);
  int64_t a2 = fix16(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int64_t a5 = fix16(a[5] + a[3] * 0.5 + a[4] * 0.5);
  for (int64_t y = 0; y < h; ++y) {
    int64_t xx = a2, yy = a5;
    uint8_t* out = dst + y * w * 3;
    for (int64_t x = 0; x < w; ++x) {
      const int64_t xi = shift16(xx);
      if (xi >= 0 && xi < w) {
        const int64_t yi = shift16(yy);
        if (yi >= 0 && yi < h) put(out + x * 3, s.at(yi, xi));
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

void nearest_float(const Source& s, uint8_t* dst, const double* a) {
  const int64_t h = s.h, w = s.w;
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int64_t y = 0; y < h; ++y) {
    double xx = xo, yy = yo;
    uint8_t* out = dst + y * w * 3;
    for (int64_t x = 0; x < w; ++x) {
      const int64_t xi = coord(xx, w);
      if (xi >= 0) {
        const int64_t yi = coord(yy, h);
        if (yi >= 0) put(out + x * 3, s.at(yi, xi));
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

void bilinear_at(const Source& s, uint8_t* out, double u, double v) {
  u -= 0.5;
  v -= 0.5;
  const int64_t x = floor_small(u), y = floor_small(v);
  const double dx = u - double(x), dy = v - double(y);
  const int64_t x0 = clip(x, s.w) * 3, x1 = clip(x + 1, s.w) * 3;
  const uint8_t* r0 = s.data + clip(y, s.h) * s.w * 3;
  const bool next = y + 1 >= 0 && y + 1 < s.h;
  const uint8_t* r1 = next ? s.data + (y + 1) * s.w * 3 : nullptr;
  for (int b = 0; b < 3; ++b) {
    double v1 = r0[x0 + b] + (int(r0[x1 + b]) - int(r0[x0 + b])) * dx;
    double v2 = next ? r1[x0 + b] + (int(r1[x1 + b]) - int(r1[x0 + b])) * dx : v1;
    v1 = v1 + (v2 - v1) * dy;
    out[b] = truncate_u8(v1);
  }
}

void bicubic_at(const Source& s, uint8_t* out, double u, double v) {
  u -= 0.5;
  v -= 0.5;
  int64_t x = floor_small(u), y = floor_small(v);
  const double dx = u - double(x), dy = v - double(y);
  --x;
  --y;
  int64_t xs[4];
  for (int k = 0; k < 4; ++k) xs[k] = clip(x + k, s.w) * 3;
  const uint8_t* rows[4];
  bool have[4];
  rows[0] = s.data + clip(y, s.h) * s.w * 3;
  have[0] = true;
  for (int k = 1; k < 4; ++k) {
    have[k] = y + k >= 0 && y + k < s.h;
    rows[k] = have[k] ? s.data + (y + k) * s.w * 3 : nullptr;
  }
  for (int b = 0; b < 3; ++b) {
    double r[4];
    for (int k = 0; k < 4; ++k) {
      if (!have[k]) {
        r[k] = r[k - 1];
        continue;
      }
      const uint8_t* p = rows[k] + b;
      r[k] = cubic(p[xs[0]], p[xs[1]], p[xs[2]], p[xs[3]], dx);
    }
    const double value = cubic(r[0], r[1], r[2], r[3], dy);
    out[b] = value <= 0.0 ? 0 : value >= 255.0 ? 255 : uint8_t(value);
  }
}

template <void (*Filter)(const Source&, uint8_t*, double, double)>
void generic(const Source& s, uint8_t* dst, const double* a) {
  const int64_t h = s.h, w = s.w;
  for (int64_t y = 0; y < h; ++y) {
    const double yin = double(y) + 0.5;
    uint8_t* out = dst + y * w * 3;
    for (int64_t x = 0; x < w; ++x) {
      const double xin = double(x) + 0.5;
      const double u = a[0] * xin + a[1] * yin + a[2];
      const double v = a[3] * xin + a[4] * yin + a[5];
      if (!(u >= 0.0 && u < double(w) && v >= 0.0 && v < double(h))) continue;  // keeps the fill
      Filter(s, out + x * 3, u, v);
    }
  }
}

}  // namespace

void pil_affine(const RgbImage& img, const double* m, int resample, const uint8_t* fill) {
  const int64_t h = img.height, w = img.width;
  ScratchBuffer<uint8_t, struct PilAffineSource> source;
  std::vector<uint8_t>& src = *source;
  src.assign(img.data, img.data + h * w * 3);
  for (int64_t i = 0; i < h * w; ++i) put(img.data + i * 3, fill);
  const Source s{src.data(), h, w};
  if (resample == kBilinear) {
    generic<bilinear_at>(s, img.data, m);
  } else if (resample == kBicubic) {
    generic<bicubic_at>(s, img.data, m);
  } else if (m[1] == 0 && m[3] == 0) {
    nearest_scale(s, img.data, m);
  } else if (fits_fixed(m, 0, 0) && fits_fixed(m, double(w), double(h)) && fits_fixed(m, 0, double(h)) &&
             fits_fixed(m, double(w), 0)) {
    nearest_fixed(s, img.data, m);
  } else {
    nearest_float(s, img.data, m);
  }
}

template <>
void run_op<Code::Fill>(const RgbImage&, const Args& a, ProgramState& state) {
  for (int c = 0; c < 3; ++c) state.fill[c] = uint8_t(a.integer("color", c));
}

template <>
void run_op<Code::PilAffineLow>(const RgbImage&, const Args& a, ProgramState& state) {
  for (int c = 0; c < 6; ++c) state.low[c] += double(a.real("data", c));
}

template <>
void run_op<Code::PilAffine>(const RgbImage& img, const Args& a, ProgramState& state) {
  double m[6];
  for (int c = 0; c < 6; ++c) m[c] = double(a.real("data", c)) + state.low[c], state.low[c] = 0;  // hi + (mid + lo)
  pil_affine(img, m, a.choice("resample"), state.fill);
}

}  // namespace spdl_torch::core::augment
