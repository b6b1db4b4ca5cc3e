// SPDX-License-Identifier: BSD-3-Clause
// The augmentation kernels (csrc/core/augment) alone, under ASan/UBSan (make test-sanitize): every op on
// odd sizes (1x1, 1xN, Nx1, small odd rectangles) with buffers sized exactly, so a read or write outside
// the image is an error; exact identities (rotations by 0 / 90 / 180 degrees, translations past the
// image = the fill, involutions, the erase box, Pillow's enhancers at their fixed points); pil_affine_low
// parts summed into the next pil_affine's double matrix; the validation messages; a program through
// decode_batch equals the kernels run by hand on the plain path's output. Values against torchvision and
// Pillow: tests/io.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/augment/erase.h"
#include "core/augment/kernels.h"
#include "core/augment/ops.h"
#include "core/errors.h"
#include "core/resample.h"
#include "tests/test_support.h"

using namespace spdl_torch::core;
using namespace spdl_torch::core::augment;

namespace {

std::vector<uint8_t> random_image(int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> px(size_t(h * w * 3));
  for (auto& v : px) v = uint8_t(rng() & 0xFF);
  return px;
}

std::vector<float> row(int code, std::vector<float> args) {
  std::vector<float> r(kColumns, 0.0f);
  r[0] = float(code);
  for (size_t i = 0; i < args.size(); ++i) r[1 + i] = args[i];
  return r;
}

// Every op with a few arguments, for the size sweep.
std::vector<std::vector<float>> all_rows() {
  return {row(1, {30, 2, -1, 10, -5, 0, 128}),
          row(1, {-45, 0.5f, 0.25f, 0, 20, 1, 7}),
          row(1, {90, 0, 0, 0, 0, 1, -1}),
          row(2, {1.7f}),
          row(3, {0.3f}),
          row(4, {2.0f}),
          row(5, {-0.3f}),
          row(5, {0.5f}),
          row(6, {0.0f}),
          row(6, {3.0f}),
          row(7, {3}),
          row(7, {0}),
          row(8, {100}),
          row(9, {}),
          row(10, {}),
          row(11, {}),
          row(12, {}),
          row(13, {5, 3, 1.5f, 0.7f}),
          row(13, {1, 9, 0.3f, 4.0f}),
          row(14, {255, 0, 7}),
          row(15, {1, 0.3f, -2, 0, 1, 0, 0}),
          row(15, {1, 0.3f, -2, 0, 1, 0, 1}),
          row(15, {1, 0.3f, -2, 0, 1, 0, 2}),
          row(15, {0.866f, -0.5f, 3, 0.5f, 0.866f, -1, 0}),
          row(15, {-1, 0, 5, 0, -1, 5, 2}),
          row(15, {1e6f, 0, 0, 0, 1e6f, 0, 0}),
          row(15, {-3e38f, 3e38f, 1, 2, -3e38f, 3e38f, 1}),
          row(15, {2, 0, -1e5f, 0, 2, 1e5f, 2}),
          row(16, {30, 128}),
          row(16, {255, 256}),
          row(20, {1e-8f, -3e-9f, 0.5f, 0, 0, 2e-8f}),
          row(21, {0, 1.7f}),
          row(21, {1, 0.0f}),
          row(21, {2, 3.5f}),
          row(21, {2, 0.4f}),
          row(21, {3, 0.4f}),
          row(21, {3, 2.6f}),
          row(22, {0}),
          row(22, {142}),
          row(22, {255}),
          row(23, {})};
}

void test_sizes() {
  const int64_t sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {3, 3}, {2, 5}, {5, 3}, {13, 9}, {16, 16}};
  for (const auto& s : sizes) {
    for (const auto& r : all_rows()) {
      validate_step(r.data(), "test");
      std::vector<uint8_t> px = random_image(s[0], s[1], uint32_t(s[0] * 31 + s[1]));
      std::vector<uint8_t> exact(px.begin(), px.end());  // exactly sized: ASan sees any overrun
      run_program(r.data(), 1, RgbImage{exact.data(), s[0], s[1]});
      CHECK(exact.size() == px.size());
    }
  }
}

void test_identities() {
  const int64_t h = 9, w = 9;
  const std::vector<uint8_t> src = random_image(h, w, 7);
  auto px = [&](const std::vector<uint8_t>& img, int64_t y, int64_t x, int c) {
    return img[size_t((y * w + x) * 3 + c)];
  };
  for (int interp = 0; interp <= 1; ++interp) {
    std::vector<uint8_t> a = src;
    affine(RgbImage{a.data(), h, w}, 0, 0, 0, 0, 0, interp == 1, -1);
    CHECK(a == src);  // angle 0: the identity
    std::vector<uint8_t> b = src;
    affine(RgbImage{b.data(), h, w}, 180, 0, 0, 0, 0, interp == 1, 0);
    bool rot180 = true, rot90 = true;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) rot180 &= px(b, y, x, c) == px(src, h - 1 - y, w - 1 - x, c);
    CHECK(rot180);
    std::vector<uint8_t> d = src;
    affine(RgbImage{d.data(), h, w}, 90, 0, 0, 0, 0, interp == 1, 0);
    // affine turns clockwise for positive angles (rotate() passes -angle): output (y, x) = source (h-1-x, y)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) rot90 &= px(d, y, x, c) == px(src, h - 1 - x, y, c);
    CHECK(rot90);
    // translations: by whole pixels exact, past the image the fill
    std::vector<uint8_t> t = src;
    affine(RgbImage{t.data(), h, w}, 0, 2, -3, 0, 0, interp == 1, 77);
    bool shifted = true;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) {
          const int64_t sy = y + 3, sx = x - 2;
          const uint8_t want = (sy < h && sx >= 0) ? px(src, sy, sx, c) : 77;
          shifted &= px(t, y, x, c) == want;
        }
    CHECK(shifted);
    for (float fill : {0.0f, 1.0f, 200.0f, 255.0f}) {
      std::vector<uint8_t> f = src;
      affine(RgbImage{f.data(), h, w}, 0, 100, 0, 0, 0, interp == 1, fill);
      bool all = true;
      for (uint8_t v : f) all &= v == uint8_t(fill);
      CHECK(all);
    }
    std::vector<uint8_t> none = src;
    affine(RgbImage{none.data(), h, w}, 0, -50, 50, 0, 0, interp == 1, kNoFill);
    bool zeros = true;
    for (uint8_t v : none) zeros &= v == 0;
    CHECK(zeros);  // fill=None: grid_sample's zero padding
  }
  std::vector<uint8_t> inv = src;
  invert(RgbImage{inv.data(), h, w});
  invert(RgbImage{inv.data(), h, w});
  CHECK(inv == src);
  std::vector<uint8_t> bright = src;
  adjust_brightness(RgbImage{bright.data(), h, w}, 1.0f);
  CHECK(bright == src);
  std::vector<uint8_t> post = src;
  posterize(RgbImage{post.data(), h, w}, 2);
  bool two_bits = true;
  for (size_t i = 0; i < post.size(); ++i) two_bits &= post[i] == (src[i] & 0xC0);
  CHECK(two_bits);
  std::vector<uint8_t> sol = src;
  solarize(RgbImage{sol.data(), h, w}, 128);
  bool solar = true;
  for (size_t i = 0; i < sol.size(); ++i) solar &= sol[i] == (src[i] >= 128 ? 255 - src[i] : src[i]);
  CHECK(solar);
  std::vector<uint8_t> gray = src;
  rgb_to_grayscale(RgbImage{gray.data(), h, w});
  bool equal_channels = true;
  for (int64_t i = 0; i < h * w; ++i)
    equal_channels &= gray[size_t(3 * i)] == gray[size_t(3 * i + 1)] && gray[size_t(3 * i)] == gray[size_t(3 * i + 2)];
  CHECK(equal_channels);
  std::vector<uint8_t> flat(size_t(h * w * 3), 90);
  autocontrast(RgbImage{flat.data(), h, w});
  equalize(RgbImage{flat.data(), h, w});
  bool unchanged = true;
  for (uint8_t v : flat) unchanged &= v == 90;
  CHECK(unchanged);  // a flat channel stays as it is
  std::vector<uint8_t> blur = src;
  gaussian_blur(RgbImage{blur.data(), h, w}, 1, 1, 2.0f, 2.0f);
  CHECK(blur == src);  // a 1x1 kernel
}

// Pillow's transform by its definition, per pixel (no engine): nearest = floor of the sample, bilinear's 2x2
// and bicubic's 4x4 rules on integer samples, for the matrices whose samples are whole numbers + 0.5 (the
// identity, translations by whole pixels, the flips): the value of the source pixel there, or the fill.
std::vector<uint8_t> whole_pixel_transform(const std::vector<uint8_t>& src, int64_t h, int64_t w, const double* m,
                                           const uint8_t* fill) {
  std::vector<uint8_t> out(src.size());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double u = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2], v = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5];
      const bool in = u >= 0 && u < double(w) && v >= 0 && v < double(h);
      for (int c = 0; c < 3; ++c) {
        out[size_t((y * w + x) * 3 + c)] = in ? src[size_t((int64_t(v) * w + int64_t(u)) * 3 + c)] : fill[c];
      }
    }
  return out;
}

void test_pil_affine() {
  const int64_t sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {3, 5}, {9, 9}, {13, 8}};
  const uint8_t fill[3] = {12, 200, 77};
  for (const auto& s : sizes) {
    const int64_t h = s[0], w = s[1];
    const std::vector<uint8_t> src = random_image(h, w, uint32_t(h * 13 + w));
    const double dw = double(w), dh = double(h);
    const double mats[][6] = {{1, 0, 0, 0, 1, 0},   {1, 0, 2, 0, 1, -1},  {1, 0, -3, 0, 1, 4}, {-1, 0, dw, 0, -1, dh},
                              {-1, 0, dw, 0, 1, 0}, {1, 0, 0, 0, -1, dh}, {1, 0, dw, 0, 1, 0}, {1, 0, 0, 0, 1, -dh}};
    for (const auto& m : mats) {
      const std::vector<uint8_t> want = whole_pixel_transform(src, h, w, m, fill);
      for (int resample = 0; resample <= 2; ++resample) {
        std::vector<uint8_t> img = src;
        pil_affine(RgbImage{img.data(), h, w}, m, resample, fill);
        CHECK(img == want);
      }
    }
    // a shear (the fixed-point engine) and a 90-degree turn of a square (exact): every pixel a source pixel
    // or the fill, for each filter
    if (h == w) {
      const double turn[6] = {0, -1, dw, 1, 0, 0};
      std::vector<uint8_t> img = src;
      pil_affine(RgbImage{img.data(), h, w}, turn, 0, fill);
      bool exact = true;
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int c = 0; c < 3; ++c)
            exact &= img[size_t((y * w + x) * 3 + c)] == src[size_t(((x)*w + (w - 1 - y)) * 3 + c)];
      CHECK(exact);
    }
  }
  // the fill of a program: black until a fill row, per run_program call (per sample)
  const int64_t h = 4, w = 6;
  const std::vector<uint8_t> src = random_image(h, w, 99);
  std::vector<float> prog = row(15, {1, 0, 100, 0, 1, 0, 1});  // everything outside: all fill
  std::vector<float> with_fill = row(14, {9, 8, 7});
  with_fill.insert(with_fill.end(), prog.begin(), prog.end());
  std::vector<uint8_t> a = src;
  run_program(with_fill.data(), 2, RgbImage{a.data(), h, w});
  std::vector<uint8_t> b = src;
  run_program(prog.data(), 1, RgbImage{b.data(), h, w});
  bool filled = true;
  for (int64_t i = 0; i < h * w; ++i) {
    filled &= a[size_t(i * 3)] == 9 && a[size_t(i * 3 + 1)] == 8 && a[size_t(i * 3 + 2)] == 7;
    filled &= b[size_t(i * 3)] == 0 && b[size_t(i * 3 + 1)] == 0 && b[size_t(i * 3 + 2)] == 0;
  }
  CHECK(filled);
  std::vector<uint8_t> c = src;  // solarize_add: below the threshold + add (saturating), the rest kept
  run_program(row(16, {100, 128}).data(), 1, RgbImage{c.data(), h, w});
  bool solarized = true;
  for (size_t i = 0; i < c.size(); ++i) solarized &= c[i] == (src[i] < 128 ? std::min(255, src[i] + 100) : src[i]);
  CHECK(solarized);
}

// Pillow's colour rules (pil_color.cpp) at their fixed points, and pil_affine_low: a double matrix split into
// float32 hi + mid + lo parts reaches pil_affine whole, once.
void test_pil_rules() {
  const int64_t h = 6, w = 7;
  const std::vector<uint8_t> src = random_image(h, w, 21);
  auto run = [&](const std::vector<std::vector<float>>& rows, std::vector<uint8_t> img) {
    std::vector<float> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    validate_program(flat.data(), int64_t(rows.size()), [](int64_t k) { return std::to_string(k); });
    run_program(flat.data(), int64_t(rows.size()), RgbImage{img.data(), h, w});
    return img;
  };
  for (int e = 0; e < 4; ++e) CHECK(run({row(21, {float(e), 1.0f})}, src) == src);  // factor 1: the image
  auto luma = [&](size_t i) {
    return uint8_t((src[i] * 19595u + src[i + 1] * 38470u + src[i + 2] * 7471u + 0x8000u) >> 16);
  };
  const std::vector<uint8_t> black = run({row(21, {0, 0.0f})}, src), grey = run({row(21, {1, 0.0f})}, src);
  const std::vector<uint8_t> flat = run({row(21, {2, 0.0f})}, src);
  uint64_t sum = 0;
  for (size_t i = 0; i < src.size(); i += 3) sum += luma(i);
  const uint8_t mean = uint8_t(double(sum) / double(h * w) + 0.5);
  bool fixed = true;
  for (size_t i = 0; i < src.size(); i += 3) {
    for (int c = 0; c < 3; ++c) fixed &= black[i + c] == 0 && grey[i + c] == luma(i) && flat[i + c] == mean;
  }
  CHECK(fixed);  // Brightness 0: black; Color 0: convert("L"); Contrast 0: the rounded mean grey
  const std::vector<uint8_t> sharp = run({row(21, {3, 2.0f})}, src);
  bool border = true;  // Pillow's filter keeps the border rows and columns, so the blend keeps them
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      if (y == 0 || x == 0 || y == h - 1 || x == w - 1)
        for (int c = 0; c < 3; ++c) border &= sharp[size_t((y * w + x) * 3 + c)] == src[size_t((y * w + x) * 3 + c)];
  CHECK(border && sharp != src);
  std::vector<uint8_t> greys(size_t(h * w * 3));
  for (size_t i = 0; i < greys.size(); ++i) greys[i] = uint8_t(i / 3 * 5);
  CHECK(run({row(22, {77})}, greys) == greys);  // saturation 0: no hue to turn
  std::vector<uint8_t> two(size_t(h * w * 3));
  for (size_t i = 0; i < two.size(); ++i) two[i] = i % 2 ? 90 : 40;
  // ImageOps.autocontrast's table in double: 40 -> 0, 90 -> int(90 * 5.1 - 204) = 254 (5.1 is not exact)
  const double scale = 255.0 / 50, offset = -40 * scale;
  const uint8_t top = uint8_t(int(90 * scale + offset));
  bool stretched = top == 254;
  for (uint8_t v : run({row(23, {})}, two)) stretched &= v == 0 || v == top;
  CHECK(stretched);
  // pil_affine_low: the parts of a double matrix (no float32 holds these coefficients) summed before pil_affine
  const double m[6] = {std::cos(0.3), std::sin(0.3), 1.2345678901234567, -std::sin(0.3), std::cos(0.3), -0.987654321};
  float hi[6], mid[6], lo[6];
  for (int c = 0; c < 6; ++c) {
    hi[c] = float(m[c]), mid[c] = float(m[c] - hi[c]), lo[c] = float(m[c] - hi[c] - mid[c]);
    CHECK(double(hi[c]) + (double(mid[c]) + double(lo[c])) == m[c]);
  }
  const uint8_t fill[3] = {0, 0, 0};
  for (int resample = 0; resample <= 2; ++resample) {
    std::vector<uint8_t> want = src;
    pil_affine(RgbImage{want.data(), h, w}, m, resample, fill);
    const auto low1 = row(20, {mid[0], mid[1], mid[2], mid[3], mid[4], mid[5]});
    const auto low2 = row(20, {lo[0], lo[1], lo[2], lo[3], lo[4], lo[5]});
    const auto top = row(15, {hi[0], hi[1], hi[2], hi[3], hi[4], hi[5], float(resample)});
    CHECK(run({low1, low2, top}, src) == want);
    // the parts are used once: a second pil_affine row gets its own float32 values only
    const double m32[6] = {hi[0], hi[1], hi[2], hi[3], hi[4], hi[5]};
    pil_affine(RgbImage{want.data(), h, w}, m32, resample, fill);
    CHECK(run({low1, low2, top, top}, src) == want);
  }
}

void test_validation() {
  auto message = [](const std::vector<float>& r) -> std::string {
    try {
      validate_step(r.data(), "augment[2, 1]");
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(message(row(24, {})) == "augment[2, 1]: augment code 24 not supported (expected an integer 0..23)");
  // The message names the op, the argument (its component) and the table's rule (arg_rule).
  auto says = [&](const std::vector<float>& r, const std::string& what) {
    const std::string m = message(r);
    const bool ok = m == "augment[2, 1]: " + what;
    if (!ok) std::printf("  got: %s\n  want: augment[2, 1]: %s\n", m.c_str(), what.c_str());
    return ok;
  };
  CHECK(says(row(20, {1, 0, 0, 0, 1, INFINITY}), "pil_affine_low data[5]: expected a finite number, got inf"));
  CHECK(says(row(21, {4, 1}),
             "pil_enhance enhancer: expected 0 (Brightness), 1 (Color), 2 (Contrast) or 3 (Sharpness), got 4"));
  CHECK(message(row(21, {0.5f, 1})).find("pil_enhance enhancer: expected 0 (Brightness)") != std::string::npos);
  CHECK(says(row(21, {1, -0.1f}), "pil_enhance factor: expected a finite number >= 0, got -0.1"));
  CHECK(says(row(21, {3, NAN}), "pil_enhance factor: expected a finite number >= 0, got nan"));
  CHECK(says(row(22, {256}), "pil_hue shift: expected an integer in [0, 255], got 256"));
  CHECK(says(row(22, {1.5f}), "pil_hue shift: expected an integer in [0, 255], got 1.5"));
  CHECK(message(row(22, {255})) == "" && message(row(23, {})) == "" && message(row(20, {0, 0, 0, 0, 0, 0})) == "");
  CHECK(message(row(14, {0, 255, 128})) == "");
  CHECK(says(row(14, {0, 256, 0}), "fill color[1]: expected an integer in [0, 255], got 256"));
  CHECK(says(row(14, {0.5f, 0, 0}), "fill color[0]: expected an integer in [0, 255], got 0.5"));
  CHECK(says(row(15, {1, 0, 0, 0, 1, 0, 3}),
             "pil_affine resample: expected 0 (NEAREST), 1 (BILINEAR) or 2 (BICUBIC), got 3"));
  CHECK(says(row(15, {1, 0, NAN, 0, 1, 0, 0}), "pil_affine data[2]: expected a finite number, got nan"));
  CHECK(says(row(16, {256, 128}), "solarize_add add: expected an integer in [0, 255], got 256"));
  CHECK(says(row(16, {3, -1}), "solarize_add threshold: expected a number in [0, 256], got -1"));
  CHECK(message(row(16, {255, 256})) == "");
  CHECK(message(row(17, {0.25f})) == "" && message(row(18, {0})) == "" && message(row(19, {1})) == "");
  CHECK(message(row(19, {0.5f, 7})) == "");  // the columns after the last argument are not read
  CHECK(says(row(17, {-0.1f}), "mix_begin weight: expected a finite number >= 0, got -0.1"));
  CHECK(says(row(18, {NAN}), "mix_add weight: expected a finite number >= 0, got nan"));
  CHECK(says(row(18, {INFINITY}), "mix_add weight: expected a finite number >= 0, got inf"));
  CHECK(says(row(19, {1.5f}), "mix_end alpha: expected a number in [0, 1], got 1.5"));
  CHECK(says(row(19, {NAN}), "mix_end alpha: expected a number in [0, 1], got nan"));
  CHECK(message(row(-1, {})).find("augment code -1 not supported") != std::string::npos);
  CHECK(message(row(2, {})) == "");
  CHECK(message(row(0, {NAN, 5})) == "");
  CHECK(says(row(2, {-0.5f}), "adjust_brightness brightness_factor: expected a finite number >= 0, got -0.5"));
  CHECK(says(row(5, {0.6f}), "adjust_hue hue_factor: expected a number in [-0.5, 0.5], got 0.6"));
  CHECK(says(row(7, {2.5f}), "posterize bits: expected an integer in [0, 8], got 2.5"));
  CHECK(says(row(7, {9}), "posterize bits: expected an integer in [0, 8], got 9"));
  CHECK(says(row(8, {256}), "solarize threshold: expected a finite number <= 255, got 256"));
  CHECK(says(row(1, {0, 0, 0, 90, 0, 0, 0}), "affine shear[0]: expected a number in (-90, 90), got 90"));
  CHECK(says(row(1, {0, 0, 0, 0, 0, 2, 0}), "affine interpolation: expected 0 (nearest) or 1 (bilinear), got 2"));
  CHECK(says(row(1, {0, 0, 0, 0, 0, 0, 256}), "affine fill: expected a number in [0, 255], or -1 for None, got 256"));
  CHECK(says(row(1, {INFINITY, 0, 0, 0, 0, 0, 0}), "affine angle: expected a finite number, got inf"));
  CHECK(says(row(13, {4, 3, 1, 1}), "gaussian_blur kernel_size[0]: expected an odd integer in [1, 1001], got 4"));
  CHECK(says(row(13, {3, 3, 0, 1}), "gaussian_blur sigma[0]: expected a finite number > 0, got 0"));
  auto erase_message = [](std::vector<float> r) -> std::string {
    try {
      validate_erase(r.data(), "erase[0]");
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(erase_message({3, 0, 0, 1, 1, 0, 0, 0}) ==
        "erase[0]: erase mode: expected 0 (off), 1 (value) or 2 (random), got 3");
  CHECK(erase_message({1, -1, 0, 1, 1, 0, 0, 0}) ==
        "erase[0]: erase top: expected an integer in [0, 16777216], got -1");
  CHECK(erase_message({1, 0, 0.5f, 1, 1, 0, 0, 0}).find("erase left: expected an integer") != std::string::npos);
  CHECK(erase_message({0, -1, -1, -1, -1, NAN, 0, 0}) == "");
  CHECK(erase_message({1, 0, 0, 1, 1, NAN, 0, 0}) == "erase[0]: erase value[0]: expected a number (not NaN), got nan");
  CHECK(erase_message({1, 0, 0, 1, 1, -INFINITY, 0, 0}) == "");
}

// The op table: rows built by argument name (Row) land in the table's columns; its errors name the op and argument;
// the JSON Python reads names every op.
void test_op_table() {
  const std::vector<float> affine =
      Row("affine").set("angle", 17).set("translate", {1, 2}).set("shear", {3, 4}).values();
  CHECK(affine == std::vector<float>({1, 17, 1, 2, 3, 4, 0, kNoFill}));  // interpolation and fill: their defaults
  CHECK(Row("pil_enhance").set("enhancer", "Sharpness").set("factor", 2).values()[1] == 3);
  CHECK(Row("mix_end").values()[1] == 1);
  auto error = [](auto build) -> std::string {
    try {
      build();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error([] { Row("brightness"); }) == "no augment op named 'brightness'");
  CHECK(error([] { Row("adjust_hue").set("factor", 0.1f); }) == "adjust_hue has no argument 'factor'");
  CHECK(error([] { Row("affine").set("shear", 1); }) == "affine shear: expected 2 values, got 1");
  CHECK(error([] { Row("affine").set("angle", 1).values(); }) == "affine: missing argument 'translate'");
  CHECK(error([] { Row("pil_enhance").set("enhancer", "Blur"); }) == "pil_enhance enhancer: no choice 'Blur'");
  const std::string json = op_table_json();
  for (const OpSpec& op : kOps) CHECK(json.find(std::string("\"name\": \"") + op.name + "\"") != std::string::npos);
  CHECK(json.find("\"rule\": \"a number in (-90, 90)\"") != std::string::npos);
  CHECK(int(Code::PilAutocontrast) == kMaxCode && op_spec(Code::Affine).columns() == 7);
}

// The mix rows' nesting: validate_program names the row at fault.
void test_mix_validation() {
  auto message = [](const std::vector<std::vector<float>>& rows) -> std::string {
    std::vector<float> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    try {
      validate_program(flat.data(), int64_t(rows.size()),
                       [](int64_t k) { return "augment[1, " + std::to_string(k) + "]"; });
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  const auto begin = row(17, {0.5f}), add = row(18, {0.25f}), end = row(19, {1}), inv = row(11, {}), pad = row(0, {});
  CHECK(message({}) == "");
  CHECK(message({begin, inv, add, inv, add, end, pad}) == "");
  CHECK(message({begin, end}) == "");                                  // no chain: w0 * image
  CHECK(message({begin, add, end, inv, begin, inv, add, end}) == "");  // two mixes one after the other
  CHECK(message({inv, add, end}) == "augment[1, 1]: mix_add without a mix_begin before it");
  CHECK(message({pad, end}) == "augment[1, 1]: mix_end without a mix_begin before it");
  CHECK(message({begin, add, end, end}) == "augment[1, 3]: mix_end without a mix_begin before it");
  CHECK(message({begin, inv, begin, add, end}) ==
        "augment[1, 2]: mix_begin inside the mix begun at row 0 (mixes do not nest)");
  CHECK(message({inv, begin, inv, add}) ==
        "augment[1, 1]: mix_begin without a mix_end (the program ends inside the mix)");
  CHECK(message({begin, row(14, {300}), add, end}) ==
        "augment[1, 1]: fill color[0]: expected an integer in [0, 255], got 300");
  CHECK(message({begin, row(18, {-1}), end}).find("augment[1, 1]: mix_add weight: expected a finite number") == 0);
}

// A mix of 1..4 chains on odd sizes (exactly sized buffers) equals the sum computed here from the chains run
// alone: float32 products and sums in torchvision's order, clamp, truncation; alpha below 1: Pillow's blend.
void test_mix() {
  const int64_t sizes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 3}, {5, 3}, {13, 9}};
  const std::vector<std::vector<float>> chains[] = {{row(11, {})},
                                                    {row(7, {2}), row(2, {1.6f})},
                                                    {row(1, {20, 1, -1, 5, 0, 1, -1}), row(9, {}), row(8, {90})},
                                                    {row(12, {}), row(6, {2.5f})}};
  const float weights[] = {0.3f, 0.2f, 0.15f, 0.25f, 0.1f};  // w0, then one per chain (a sum of 1)
  for (const auto& s : sizes) {
    const int64_t h = s[0], w = s[1];
    const std::vector<uint8_t> src = random_image(h, w, uint32_t(h * 131 + w));
    const size_t n = src.size();
    for (int width = 1; width <= 4; ++width) {
      for (int mode = 0; mode <= 1; ++mode) {
        const float alpha = 0.35f;
        std::vector<float> rows = row(17, {weights[0]});
        std::vector<float> sum(n);
        for (size_t i = 0; i < n; ++i) sum[i] = weights[0] * float(src[i]);
        for (int c = 0; c < width; ++c) {
          std::vector<uint8_t> chain(src);
          for (const auto& r : chains[c]) {
            rows.insert(rows.end(), r.begin(), r.end());
            run_program(r.data(), 1, RgbImage{chain.data(), h, w});
          }
          const auto add = row(18, {weights[1 + c]});
          rows.insert(rows.end(), add.begin(), add.end());
          for (size_t i = 0; i < n; ++i) {
            const float product = weights[1 + c] * float(chain[i]);
            sum[i] = sum[i] + product;
          }
        }
        const auto end = row(19, {mode == 0 ? 1.0f : alpha});  // alpha 1: the mix itself
        rows.insert(rows.end(), end.begin(), end.end());
        const int64_t steps = int64_t(rows.size()) / kColumns;
        validate_program(rows.data(), steps, [](int64_t k) { return std::to_string(k); });
        std::vector<uint8_t> got(src);
        run_program(rows.data(), steps, RgbImage{got.data(), h, w});
        bool exact = true;
        for (size_t i = 0; i < n; ++i) {
          const int mixed = int(std::min(std::max(sum[i], 0.0f), 255.0f));
          const int want = mode == 0 ? mixed : int(float(int(src[i])) + alpha * float(mixed - int(src[i])));
          exact &= got[i] == uint8_t(want);
        }
        CHECK(exact);
      }
    }
  }
  // The clamp: weights summing past 1 saturate at 255; a weight of 0 everywhere gives zeros; alpha 0 gives the
  // source back, alpha 1 the mixed image.
  const std::vector<uint8_t> src = random_image(3, 4, 9);
  std::vector<float> over = row(17, {2.0f});
  for (const auto& r : {row(11, {}), row(18, {2.0f}), row(19, {1})}) over.insert(over.end(), r.begin(), r.end());
  std::vector<uint8_t> sat(src);
  run_program(over.data(), 4, RgbImage{sat.data(), 3, 4});
  bool all255 = true;
  for (uint8_t v : sat) all255 &= v == 255;  // 2 v + 2 (255 - v) = 510
  CHECK(all255);
  for (float alpha : {0.0f, 1.0f}) {
    std::vector<float> blend = row(17, {0.0f});
    for (const auto& r : {row(11, {}), row(18, {1.0f}), row(19, {alpha})})
      blend.insert(blend.end(), r.begin(), r.end());
    std::vector<uint8_t> b(src);
    run_program(blend.data(), 4, RgbImage{b.data(), 3, 4});
    bool ok = true;
    for (size_t i = 0; i < b.size(); ++i) ok &= b[i] == (alpha == 0 ? src[i] : uint8_t(255 - src[i]));
    CHECK(ok);
  }
  std::vector<float> zero = row(17, {0.0f});
  for (const auto& r : {row(18, {0.0f}), row(19, {1})}) zero.insert(zero.end(), r.begin(), r.end());
  std::vector<uint8_t> z(src);
  run_program(zero.data(), 3, RgbImage{z.data(), 3, 4});
  bool zeros = true;
  for (uint8_t v : z) zeros &= v == 0;
  CHECK(zeros);
  // A mix_add outside a mix reaching the kernels is an internal error, not a read past a buffer.
  bool threw = false;
  try {
    MixState mix;
    mix_add(RgbImage{z.data(), 3, 4}, 1.0f, mix);
  } catch (const InternalError&) {
    threw = true;
  }
  CHECK(threw);
}

void test_erase() {
  const int64_t h = 5, w = 7;
  std::vector<float> slot(size_t(3 * h * w), -9.0f);
  SlotWriter out;
  out.data = reinterpret_cast<uint8_t*>(slot.data());
  out.type = OutType::Float32;
  out.stride_c = h * w;
  out.stride_h = w;
  out.stride_w = 1;
  out.height = h;
  out.width = w;
  const float value_row[8] = {1, 1, 2, 3, 100, 0.5f, -1.25f, 2.0f};  // width clipped at the right edge
  erase(value_row, 0, out);
  bool exact = true;
  for (int c = 0; c < 3; ++c)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const bool in = y >= 1 && y < 4 && x >= 2;
        exact &= slot[size_t(c * h * w + y * w + x)] == (in ? value_row[5 + c] : -9.0f);
      }
  CHECK(exact);
  std::vector<float> a(size_t(3 * h * w), 0.0f), b = a;
  const float random_row[8] = {2, 0, 0, 5, 7, 0, 0, 0};
  out.data = reinterpret_cast<uint8_t*>(a.data());
  erase(random_row, 42, out);
  out.data = reinterpret_cast<uint8_t*>(b.data());
  erase(random_row, 42, out);
  CHECK(a == b);  // the sample's seed decides the values
  double sum = 0, sq = 0;
  for (float v : a) sum += v, sq += double(v) * v;
  const double n = double(a.size()), mean = sum / n;
  CHECK(std::fabs(mean) < 0.5 && std::fabs(sq / n - mean * mean - 1.0) < 0.5);
  out.data = reinterpret_cast<uint8_t*>(b.data());
  erase(random_row, 43, out);
  CHECK(a != b);
  erase(random_row, 42, out, 1);  // the sample's second box: its own stream
  CHECK(a != b);
  std::vector<float> c = b;
  out.data = reinterpret_cast<uint8_t*>(c.data());
  erase(random_row, 42, out, 1);
  CHECK(b == c);
  out.data = reinterpret_cast<uint8_t*>(b.data());
  std::vector<uint8_t> bytes(size_t(h * w), 1);
  SlotWriter u8 = out;
  u8.data = bytes.data();
  u8.type = OutType::UInt8;
  u8.channels = 1;
  u8.stride_c = h * w;
  const float u8_row[8] = {1, 4, 6, 9, 9, 300.7f, 0, 0};  // clipped to the last pixel; the value clamped
  erase(u8_row, 0, u8);
  CHECK(bytes[size_t(h * w - 1)] == 255 && bytes[size_t(h * w - 2)] == 1);
  const float zero_box[8] = {1, 9, 9, 0, 0, 5, 5, 5};  // starts past the slot: nothing
  erase(zero_box, 0, u8);
  CHECK(bytes[size_t(h * w - 1)] == 255);
}

}  // namespace

int main() {
  test_sizes();
  test_identities();
  test_pil_affine();
  test_pil_rules();
  test_validation();
  test_op_table();
  test_mix_validation();
  test_mix();
  test_erase();
  std::printf("augment_test: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
