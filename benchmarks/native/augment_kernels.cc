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

// Each op's row, built by argument name from the op table (csrc/core/augment/op_table.h).
std::vector<Op> ops() {
  auto affine = [](float angle, float tx, float shear_x, const char* interpolation, float fill) {
    return Row("affine")
        .set("angle", angle)
        .set("translate", {tx, 0})
        .set("shear", {shear_x, 0})
        .set("interpolation", interpolation)
        .set("fill", fill)
        .values();
  };
  auto pil_rotate = [](const char* resample) {
    return Row("pil_affine")
        .set("data", {0.956305f, 0.292372f, -23.5f, -0.292372f, 0.956305f, 30.1f})
        .set("resample", resample)
        .values();
  };
  auto enhance = [](const char* enhancer) {
    return Row("pil_enhance").set("enhancer", enhancer).set("factor", 1.3f).values();
  };
  auto blur = [](float k, float sigma) {
    return Row("gaussian_blur").set("kernel_size", {k, k}).set("sigma", {sigma, sigma}).values();
  };
  return {
      {"rotate bilinear", affine(17, 0, 0, "bilinear", 0)},
      {"rotate nearest", affine(17, 0, 0, "nearest", 0)},
      {"shear_x nearest", affine(0, 0, 16.7f, "nearest", 128)},
      {"translate nearest", affine(0, 21, 0, "nearest", kNoFill)},
      {"brightness", Row("adjust_brightness").set("brightness_factor", 1.3f).values()},
      {"contrast", Row("adjust_contrast").set("contrast_factor", 1.3f).values()},
      {"saturation", Row("adjust_saturation").set("saturation_factor", 1.3f).values()},
      {"hue", Row("adjust_hue").set("hue_factor", 0.1f).values()},
      {"sharpness", Row("adjust_sharpness").set("sharpness_factor", 1.3f).values()},
      {"posterize", Row("posterize").set("bits", 5).values()},
      {"solarize", Row("solarize").set("threshold", 128).values()},
      {"autocontrast", Row("autocontrast").values()},
      {"equalize", Row("equalize").values()},
      {"invert", Row("invert").values()},
      {"grayscale", Row("rgb_to_grayscale").values()},
      {"gaussian_blur k23 s2", blur(23, 2)},
      {"gaussian_blur k9 s1", blur(9, 1)},
      // Pillow's rules (the ops of PIL images): a rotation by 17 degrees about the centre, the enhancers, the HSV
      // hue, autocontrast
      {"pil rotate bilinear", pil_rotate("BILINEAR")},
      {"pil rotate bicubic", pil_rotate("BICUBIC")},
      {"pil rotate nearest", pil_rotate("NEAREST")},
      {"pil contrast", enhance("Contrast")},
      {"pil color", enhance("Color")},
      {"pil sharpness", enhance("Sharpness")},
      {"pil hue", Row("pil_hue").set("shift", 25).values()},
      {"pil autocontrast", Row("pil_autocontrast").values()},
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
