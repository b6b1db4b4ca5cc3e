// Per-image time of each augmentation kernel (csrc/core/augment) on a photo-like uint8 RGB image, without
// decode or resample: `make bench-augment-kernels` builds it with the extension's flags and runs it.
//   augment_kernels [SIZE ...]     (default 176 224); prints microseconds per image, the best of 7 rounds
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/augment/ops.h"

using namespace spdl_torch::core::augment;

namespace {

struct Op {
  const char* name;
  std::vector<float> row;
};

std::vector<Op> ops() {
  auto r = [](Code c, std::vector<float> a) {
    std::vector<float> v(kColumns, 0.0f);
    v[0] = float(int(c));
    std::copy(a.begin(), a.end(), v.begin() + 1);
    return v;
  };
  return {
      {"rotate bilinear", r(Code::Affine, {17, 0, 0, 0, 0, 1, 0})},
      {"rotate nearest", r(Code::Affine, {17, 0, 0, 0, 0, 0, 0})},
      {"shear_x nearest", r(Code::Affine, {0, 0, 0, 16.7f, 0, 0, 128})},
      {"translate nearest", r(Code::Affine, {0, 21, 0, 0, 0, 0, kNoFill})},
      {"brightness", r(Code::Brightness, {1.3f})},
      {"contrast", r(Code::Contrast, {1.3f})},
      {"saturation", r(Code::Saturation, {1.3f})},
      {"hue", r(Code::Hue, {0.1f})},
      {"sharpness", r(Code::Sharpness, {1.3f})},
      {"posterize", r(Code::Posterize, {5})},
      {"solarize", r(Code::Solarize, {128})},
      {"autocontrast", r(Code::Autocontrast, {})},
      {"equalize", r(Code::Equalize, {})},
      {"invert", r(Code::Invert, {})},
      {"grayscale", r(Code::Grayscale, {})},
      {"gaussian_blur k23 s2", r(Code::GaussianBlur, {23, 23, 2, 2})},
      {"gaussian_blur k9 s1", r(Code::GaussianBlur, {9, 9, 1, 1})},
      // Pillow's rules (the ops of PIL images): a rotation by 17 degrees about the centre (its low parts
      // are summed in the program, as run_program does), the enhancers, the HSV hue, autocontrast
      {"pil rotate bilinear", r(Code::PilAffine, {0.956305f, 0.292372f, -23.5f, -0.292372f, 0.956305f, 30.1f, 1})},
      {"pil rotate bicubic", r(Code::PilAffine, {0.956305f, 0.292372f, -23.5f, -0.292372f, 0.956305f, 30.1f, 2})},
      {"pil rotate nearest", r(Code::PilAffine, {0.956305f, 0.292372f, -23.5f, -0.292372f, 0.956305f, 30.1f, 0})},
      {"pil contrast", r(Code::PilEnhance, {2, 1.3f})},
      {"pil color", r(Code::PilEnhance, {1, 1.3f})},
      {"pil sharpness", r(Code::PilEnhance, {3, 1.3f})},
      {"pil hue", r(Code::PilHue, {25})},
      {"pil autocontrast", r(Code::PilAutocontrast, {})},
  };
}

// Smooth colour cells plus grain, like a photo's statistics.
std::vector<uint8_t> photo(int64_t h, int64_t w) {
  std::mt19937 rng(1);
  std::vector<uint8_t> px(size_t(h * w * 3));
  const int64_t cell = 8;
  std::vector<int> cells(size_t((h / cell + 2) * (w / cell + 2) * 3));
  for (auto& v : cells) v = int(rng() % 256);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = cells[size_t(((y / cell) * (w / cell + 2) + x / cell) * 3 + c)] + int(rng() % 25) - 12;
        px[size_t((y * w + x) * 3 + c)] = uint8_t(std::clamp(v, 0, 255));
      }
    }
  }
  return px;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {176, 224};
  for (int64_t s : sizes) {
    const std::vector<uint8_t> base = photo(s, s);
    std::vector<uint8_t> work(base.size());
    std::printf("%lldx%lld (us/image, best of 7 rounds)\n", (long long)s, (long long)s);
    for (const Op& op : ops()) {
      const int iters = 40;
      double best = 1e30;
      for (int round = 0; round < 7; ++round) {
        double total = 0;
        for (int i = 0; i < iters; ++i) {
          std::copy(base.begin(), base.end(), work.begin());
          const auto t0 = std::chrono::steady_clock::now();
          run_program(op.row.data(), 1, RgbImage{work.data(), s, s});
          total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        best = std::min(best, total / iters);
      }
      std::printf("  %-22s %9.1f\n", op.name, best * 1e6);
    }
  }
  return 0;
}
