// Program rows: their validation and their dispatch to the kernels.
#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "core/augment/kernels.h"
#include "core/augment/ops.h"
#include "core/errors.h"

namespace spdl_torch::core::augment {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw InvalidArgument(where + ": " + what);
}

std::string num(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool is_int(float v) { return std::isfinite(v) && v == std::floor(v); }

void need_finite(const float* row, int first, int last, const std::string& where, const char* op) {
  for (int a = first; a <= last; ++a) {
    if (!std::isfinite(row[1 + a])) {
      bad(where, std::string("expected finite ") + op + " arguments, got a" + std::to_string(a) + "=" + num(row[1 + a]));
    }
  }
}

void need_weight(float v, const std::string& where, const char* op) {
  if (!std::isfinite(v) || v < 0) bad(where, std::string("expected a finite ") + op + " weight >= 0, got " + num(v));
}

void need_factor(float v, const std::string& where, const char* op) {
  if (!std::isfinite(v) || v < 0) bad(where, std::string("expected a finite ") + op + " factor >= 0, got " + num(v));
}

}  // namespace

void validate_step(const float* row, const std::string& where) {
  const float code = row[0];
  if (code == 0) return;
  if (!is_int(code) || code < 0 || code > kMaxCode) {
    bad(where, "augment code " + num(code) + " not supported (expected an integer 0.." + std::to_string(kMaxCode) + ")");
  }
  const float a0 = row[1];
  switch (Code(int(code))) {
    case Code::None:
      return;
    case Code::Affine: {
      need_finite(row, 0, 6, where, "affine");
      for (int a : {3, 4}) {
        if (!(std::fabs(row[1 + a]) < 90.0f)) bad(where, "expected an affine shear in (-90, 90) degrees, got " + num(row[1 + a]));
      }
      if (row[6] != 0 && row[6] != 1) bad(where, "expected affine interpolation 0 (nearest) or 1 (bilinear), got " + num(row[6]));
      if (row[7] != kNoFill && !(row[7] >= 0 && row[7] <= 255)) {
        bad(where, "expected an affine fill in [0, 255] (or -1 for none), got " + num(row[7]));
      }
      return;
    }
    case Code::Brightness:
      return need_factor(a0, where, "brightness");
    case Code::Contrast:
      return need_factor(a0, where, "contrast");
    case Code::Saturation:
      return need_factor(a0, where, "saturation");
    case Code::Sharpness:
      return need_factor(a0, where, "sharpness");
    case Code::Hue:
      if (!(a0 >= -0.5f && a0 <= 0.5f)) bad(where, "expected a hue factor in [-0.5, 0.5], got " + num(a0));
      return;
    case Code::Posterize:
      if (!is_int(a0) || a0 < 0 || a0 > 8) bad(where, "expected posterize bits as an integer 0..8, got " + num(a0));
      return;
    case Code::Solarize:
      if (!std::isfinite(a0) || a0 > 255) bad(where, "expected a finite solarize threshold <= 255, got " + num(a0));
      return;
    case Code::Autocontrast:
    case Code::Equalize:
    case Code::Invert:
    case Code::Grayscale:
      return;
    case Code::GaussianBlur:
      for (int a : {0, 1}) {
        const float k = row[1 + a];
        if (!is_int(k) || k < 1 || int64_t(k) % 2 == 0 || k > 1001) {
          bad(where, "expected gaussian_blur kernel sizes odd integers 1..1001, got " + num(k));
        }
      }
      for (int a : {2, 3}) {
        if (!std::isfinite(row[1 + a]) || !(row[1 + a] > 0)) {
          bad(where, "expected gaussian_blur sigmas finite and > 0, got " + num(row[1 + a]));
        }
      }
      return;
    case Code::Fill:
      for (int a = 0; a < 3; ++a) {
        if (!is_int(row[1 + a]) || row[1 + a] < 0 || row[1 + a] > 255) {
          bad(where, "expected fill colours R, G, B as integers 0..255, got a" + std::to_string(a) + "=" + num(row[1 + a]));
        }
      }
      return;
    case Code::PilAffine:
      need_finite(row, 0, 5, where, "pil_affine");
      if (row[7] != 0 && row[7] != 1 && row[7] != 2) {
        bad(where, "expected pil_affine resample 0 (NEAREST), 1 (BILINEAR) or 2 (BICUBIC), got " + num(row[7]));
      }
      return;
    case Code::SolarizeAdd:
      if (!is_int(a0) || a0 < 0 || a0 > 255) bad(where, "expected a solarize_add addend as an integer 0..255, got " + num(a0));
      if (!(row[2] >= 0 && row[2] <= 256)) bad(where, "expected a solarize_add threshold in [0, 256], got " + num(row[2]));
      return;
    case Code::MixBegin:
      return need_weight(a0, where, "mix_begin");
    case Code::MixAdd:
      return need_weight(a0, where, "mix_add");
    case Code::MixEnd:
      if (a0 != 0 && a0 != 1) bad(where, "expected a mix_end mode 0 (torchvision) or 1 (blend), got " + num(a0));
      if (a0 == 1 && !(row[2] >= 0 && row[2] <= 1)) bad(where, "expected a mix_end blend alpha in [0, 1], got " + num(row[2]));
      return;
    case Code::PilAffineLow: return need_finite(row, 0, 5, where, "pil_affine_low");
    case Code::PilEnhance:
      if (a0 != 0 && a0 != 1 && a0 != 2 && a0 != 3) {
        bad(where,
            "expected a pil_enhance enhancer 0 (Brightness), 1 (Color), 2 (Contrast) or 3 (Sharpness), got " + num(a0));
      }
      return need_factor(row[2], where, "pil_enhance");
    case Code::PilHue:
      if (!is_int(a0) || a0 < 0 || a0 > 255)
        bad(where, "expected a pil_hue shift as an integer 0..255, got " + num(a0));
      return;
    case Code::PilAutocontrast: return;
  }
  bad(where, "augment code " + num(code) + " not supported");
}

void validate_program(const float* rows, int64_t steps, const std::function<std::string(int64_t)>& where) {
  int64_t open = -1;  // the row of the mix in progress
  for (int64_t k = 0; k < steps; ++k) {
    const float* r = rows + k * kColumns;
    validate_step(r, where(k));
    const float code = r[0];
    if (code == float(Code::MixBegin)) {
      if (open >= 0) bad(where(k), "mix_begin inside the mix begun at row " + std::to_string(open) + " (mixes do not nest)");
      open = k;
    } else if (code == float(Code::MixAdd) || code == float(Code::MixEnd)) {
      if (open < 0) bad(where(k), std::string(code == float(Code::MixAdd) ? "mix_add" : "mix_end") + " without a mix_begin before it");
      if (code == float(Code::MixEnd)) open = -1;
    }
  }
  if (open >= 0) bad(where(open), "mix_begin without a mix_end (the program ends inside the mix)");
}

void validate_erase(const float* row, const std::string& where) {
  const float apply = row[0];
  if (apply != 0 && apply != 1 && apply != 2) {
    bad(where, "expected erase apply 0 (off), 1 (value) or 2 (random), got " + num(apply));
  }
  if (apply == 0) return;
  static const char* names[] = {"top", "left", "height", "width"};
  for (int c = 1; c <= 4; ++c) {
    if (!is_int(row[c]) || row[c] < 0 || row[c] > float(int64_t(1) << 24)) {
      bad(where, std::string("expected an erase ") + names[c - 1] + " as an integer >= 0, got " + num(row[c]));
    }
  }
  if (apply == 1) {
    for (int c = 5; c < 8; ++c) {
      if (std::isnan(row[c])) bad(where, "expected erase values that are not NaN, got v" + std::to_string(c - 5) + "=nan");
    }
  }
}

bool has_program(const float* rows, int64_t steps) {
  for (int64_t k = 0; k < steps; ++k) {
    if (rows[k * kColumns] != 0) return true;
  }
  return false;
}

void run_program(const float* rows, int64_t steps, const RgbImage& img) {
  if (img.pixels() <= 0) return;
  uint8_t fill[3] = {0, 0, 0};  // the fill of pil_affine rows: Pillow's default until a fill row
  double low[6] = {0, 0, 0, 0, 0, 0};  // the pil_affine_low parts of the next pil_affine row
  for (int64_t k = 0; k < steps; ++k) {
    const float* r = rows + k * kColumns;
    const float* a = r + 1;
    switch (Code(int(r[0]))) {
      case Code::None: break;
      case Code::Affine: affine(img, a[0], a[1], a[2], a[3], a[4], a[5] == 1, a[6]); break;
      case Code::Brightness: adjust_brightness(img, a[0]); break;
      case Code::Contrast: adjust_contrast(img, a[0]); break;
      case Code::Saturation: adjust_saturation(img, a[0]); break;
      case Code::Hue: adjust_hue(img, a[0]); break;
      case Code::Sharpness: adjust_sharpness(img, a[0]); break;
      case Code::Posterize: posterize(img, int(a[0])); break;
      case Code::Solarize: solarize(img, a[0]); break;
      case Code::Autocontrast: autocontrast(img); break;
      case Code::Equalize: equalize(img); break;
      case Code::Invert: invert(img); break;
      case Code::Grayscale: grayscale(img); break;
      case Code::GaussianBlur: gaussian_blur(img, int(a[0]), int(a[1]), a[2], a[3]); break;
      case Code::Fill: fill[0] = uint8_t(a[0]), fill[1] = uint8_t(a[1]), fill[2] = uint8_t(a[2]); break;
      case Code::PilAffine: {
        double m[6];
        for (int c = 0; c < 6; ++c) m[c] = double(a[c]) + low[c], low[c] = 0;  // hi + (mid + lo): exact
        pil_affine(img, m, int(a[6]), fill);
        break;
      }
      case Code::SolarizeAdd: solarize_add(img, int(a[0]), a[1]); break;
      case Code::MixBegin: mix_begin(img, a[0]); break;
      case Code::MixAdd: mix_add(img, a[0]); break;
      case Code::MixEnd: mix_end(img, int(a[0]), a[1]); break;
      case Code::PilAffineLow:
        for (int c = 0; c < 6; ++c) low[c] += double(a[c]);
        break;
      case Code::PilEnhance: pil_enhance(img, Enhancer(int(a[0])), a[1]); break;
      case Code::PilHue: pil_hue(img, int(a[0])); break;
      case Code::PilAutocontrast: pil_autocontrast(img); break;
      default: throw InternalError("augment: code " + num(r[0]) + " reached run_program unvalidated");
    }
  }
}

}  // namespace spdl_torch::core::augment
