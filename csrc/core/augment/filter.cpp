// SPDX-License-Identifier: BSD-3-Clause
// Neighbourhood kernels: sharpness (torchvision's 3x3 "smooth" kernel blended, border kept) and the
// separable Gaussian blur (reflect padding).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/simd.h"

namespace spdl_torch::core::augment {
namespace {

// Reflect padding's source index ("reflect": the edge pixel is not repeated), folded again when the
// padding reaches past the other edge.
int64_t reflect(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// torchvision's _get_gaussian_kernel1d: softmax(-(linspace(-lim, lim, k) / sigma)^2), lim = (k-1)/(2 sqrt 2),
// in float32 (torch.linspace's two-sided rule).
std::vector<float> gaussian_kernel(int k, float sigma) {
  const float lim = float(double(k - 1) / (2.0 * std::sqrt(2.0)));
  std::vector<float> x(static_cast<size_t>(k));
  const float step = k > 1 ? (lim - -lim) / float(k - 1) : 0.0f;
  const int half = k / 2;
  for (int i = 0; i < k; ++i) x[size_t(i)] = i < half ? -lim + step * float(i) : lim - step * float(k - 1 - i);
  float top = -INFINITY;
  for (float& v : x) {
    const float d = v / sigma;
    v = -(d * d);
    top = std::max(top, v);
  }
  float total = 0;
  for (float& v : x) {
    v = std::exp(v - top);
    total += v;
  }
  for (float& v : x) v /= total;
  return x;
}

}  // namespace

SPDL_TORCH_AUGMENT_CLONES
void adjust_sharpness(const RgbImage& img, float factor) {
  const int64_t h = img.height, w = img.width;
  if (h <= 2 || w <= 2) return;
  const float a = float(1.0 / 13.0), b = float(5.0 / 13.0);
  const float alpha = float(1.0 - double(factor));
  const int64_t row = w * 3;
  // Rows y - 1 and y of the source, kept aside as y is overwritten (a rolling copy, not the whole image).
  std::vector<uint8_t> prev(img.data, img.data + row);
  std::vector<uint8_t> cur(static_cast<size_t>(row));
  for (int64_t y = 1; y < h - 1; ++y) {
    std::copy(img.data + y * row, img.data + (y + 1) * row, cur.begin());
    const uint8_t* up = prev.data();
    const uint8_t* mid = cur.data();
    const uint8_t* down = img.data + (y + 1) * row;
    uint8_t* dst = img.data + y * row;
    for (int64_t i = 3; i < row - 3; ++i) {
      const float ring = float(up[i - 3]) + float(up[i]) + float(up[i + 3]) + float(mid[i - 3]) + float(mid[i + 3]) +
                         float(down[i - 3]) + float(down[i]) + float(down[i + 3]);
      const float blurred = round_even(ring * a + float(mid[i]) * b);
      const float x = float(mid[i]);
      const float v = fma_exact(blurred - x, alpha, x);
      dst[i] = uint8_t(int32_t(std::min(std::max(v, 0.0f), 255.0f)));
    }
    prev.swap(cur);
  }
}

SPDL_TORCH_AUGMENT_CLONES
void gaussian_blur(const RgbImage& img, int kernel_x, int kernel_y, float sigma_x, float sigma_y) {
  const int64_t h = img.height, w = img.width;
  const std::vector<float> kx = gaussian_kernel(kernel_x, sigma_x), ky = gaussian_kernel(kernel_y, sigma_y);
  const int rx = kernel_x / 2, ry = kernel_y / 2;
  // Horizontal pass: each row reflect-padded into floats, then a straight convolution over the interleaved
  // values (tap t of value i reads i + 3 t); then the vertical pass, rounded half to even (round_()).
  std::vector<float> tmp(size_t(h * w * 3));
  std::vector<float> padded(size_t((w + 2 * rx) * 3));
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* s = img.data + y * w * 3;
    for (int64_t i = 0; i < w + 2 * rx; ++i) {
      const uint8_t* p = s + reflect(i - rx, w) * 3;
      for (int c = 0; c < 3; ++c) padded[size_t(3 * i + c)] = float(p[c]);
    }
    float* d = tmp.data() + y * w * 3;
    std::fill(d, d + w * 3, 0.0f);
    for (int t = 0; t < kernel_x; ++t) {
      const float k = kx[size_t(t)];
      const float* __restrict src = padded.data() + 3 * t;
      float* __restrict dd = d;
      for (int64_t i = 0; i < w * 3; ++i) dd[i] += k * src[i];
    }
  }
  std::vector<float> acc(size_t(w * 3));
  for (int64_t y = 0; y < h; ++y) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int t = 0; t < kernel_y; ++t) {
      const float* __restrict s = tmp.data() + reflect(y + t - ry, h) * w * 3;
      float* __restrict a = acc.data();
      const float k = ky[size_t(t)];
      for (int64_t i = 0; i < w * 3; ++i) a[i] += k * s[i];
    }
    uint8_t* d = img.data + y * w * 3;
    for (int64_t i = 0; i < w * 3; ++i)
      d[i] = uint8_t(int32_t(std::min(std::max(round_even(acc[size_t(i)]), 0.0f), 255.0f)));
  }
}

template <>
void run_op<Code::AdjustSharpness>(const RgbImage& img, const Args& a, ProgramState&) {
  adjust_sharpness(img, a.real("sharpness_factor"));
}

template <>
void run_op<Code::GaussianBlur>(const RgbImage& img, const Args& a, ProgramState&) {
  gaussian_blur(img, a.integer("kernel_size", 0), a.integer("kernel_size", 1), a.real("sigma", 0), a.real("sigma", 1));
}

}  // namespace spdl_torch::core::augment
