// Per-channel histogram kernels: autocontrast (min/max stretch) and equalize (PIL's LUT rule, as
// torchvision's tensor kernel).
#include <algorithm>
#include <array>

#include "core/augment/kernels.h"

namespace spdl_torch::core::augment {

void autocontrast(const RgbImage& img) {
  const int64_t n = img.pixels();
  for (int c = 0; c < 3; ++c) {
    uint8_t lo = 255, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t v = img.data[3 * i + c];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // minimum, inv_scale = (max - min) * (1 / 255); a flat channel: 0 and 1 (unchanged)
    const float minimum = lo == hi ? 0.0f : float(lo);
    const float inv_scale = lo == hi ? 1.0f : float(hi - lo) * float(1.0 / 255.0);
    std::array<uint8_t, 256> lut{};
    for (int v = 0; v < 256; ++v) {
      lut[size_t(v)] = uint8_t(std::clamp((float(v) - minimum) / inv_scale, 0.0f, 255.0f));
    }
    for (int64_t i = 0; i < n; ++i) img.data[3 * i + c] = lut[img.data[3 * i + c]];
  }
}

void equalize(const RgbImage& img) {
  const int64_t n = img.pixels();
  for (int c = 0; c < 3; ++c) {
    std::array<int64_t, 256> hist{};
    for (int64_t i = 0; i < n; ++i) ++hist[img.data[3 * i + c]];
    // The last non-empty bin holds the image's maximum; PIL's step leaves its pixels out.
    int last = 255;
    while (last > 0 && hist[size_t(last)] == 0) --last;
    const int64_t step = (n - hist[size_t(last)]) / 255;
    if (step == 0) continue;  // unchanged
    std::array<uint8_t, 256> lut{};
    int64_t cum = 0;
    for (int v = 1; v < 256; ++v) {
      cum += hist[size_t(v - 1)];
      lut[size_t(v)] = uint8_t(std::clamp<int64_t>((cum + step / 2) / step, 0, 255));
    }
    for (int64_t i = 0; i < n; ++i) img.data[3 * i + c] = lut[img.data[3 * i + c]];
  }
}

}  // namespace spdl_torch::core::augment
