// SPDX-License-Identifier: BSD-3-Clause
// Per-channel histogram kernels: autocontrast (min/max stretch) and equalize (PIL's LUT rule, as
// torchvision's tensor kernel). One pass gathers the three channels' statistics, one applies their tables.
#include <algorithm>
#include <array>

#include "core/augment/kernels.h"

namespace spdl_torch::core::augment {
namespace {

using Lut = std::array<uint8_t, 256>;

void apply_luts(const RgbImage& img, const std::array<Lut, 3>& lut) {
  uint8_t* p = img.data;
  for (int64_t i = 0, n = img.pixels(); i < n; ++i, p += 3) {
    p[0] = lut[0][p[0]], p[1] = lut[1][p[1]], p[2] = lut[2][p[2]];
  }
}

}  // namespace

void autocontrast(const RgbImage& img) {
  const int64_t n = img.pixels();
  uint8_t lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
  const uint8_t* p = img.data;
  for (int64_t i = 0; i < n; ++i, p += 3) {
    for (int c = 0; c < 3; ++c) lo[c] = std::min(lo[c], p[c]), hi[c] = std::max(hi[c], p[c]);
  }
  std::array<Lut, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    // minimum, inv_scale = (max - min) * (1 / 255); a flat channel: 0 and 1 (unchanged)
    const float minimum = lo[c] == hi[c] ? 0.0f : float(lo[c]);
    const float inv_scale = lo[c] == hi[c] ? 1.0f : float(hi[c] - lo[c]) * float(1.0 / 255.0);
    for (int v = 0; v < 256; ++v) {
      lut[size_t(c)][size_t(v)] = uint8_t(std::clamp((float(v) - minimum) / inv_scale, 0.0f, 255.0f));
    }
  }
  apply_luts(img, lut);
}

void equalize(const RgbImage& img) {
  const int64_t n = img.pixels();
  std::array<std::array<int64_t, 256>, 3> hist{};
  const uint8_t* p = img.data;
  for (int64_t i = 0; i < n; ++i, p += 3) ++hist[0][p[0]], ++hist[1][p[1]], ++hist[2][p[2]];
  std::array<Lut, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    const auto& h = hist[size_t(c)];
    Lut& l = lut[size_t(c)];
    for (int v = 0; v < 256; ++v) l[size_t(v)] = uint8_t(v);  // identity: a channel left unchanged
    // The last non-empty bin holds the image's maximum; PIL's step leaves its pixels out.
    int last = 255;
    while (last > 0 && h[size_t(last)] == 0) --last;
    const int64_t step = (n - h[size_t(last)]) / 255;
    if (step == 0) continue;  // unchanged
    int64_t cum = 0;
    l[0] = 0;
    for (int v = 1; v < 256; ++v) {
      cum += h[size_t(v - 1)];
      l[size_t(v)] = uint8_t(std::clamp<int64_t>((cum + step / 2) / step, 0, 255));
    }
  }
  apply_luts(img, lut);
}

template <>
void run_op<Code::Autocontrast>(const RgbImage& img, const Args&, ProgramState&) {
  autocontrast(img);
}

template <>
void run_op<Code::Equalize>(const RgbImage& img, const Args&, ProgramState&) {
  equalize(img);
}

}  // namespace spdl_torch::core::augment
