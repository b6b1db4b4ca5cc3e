// Per-sample augmentation programs of the batch op: the op-code table (mirrored, with the same numbers,
// in spdl_torch/transforms/_augment_codes.py), the row layout, and the image the kernels work on.
//
// A program is K rows of 8 floats, [code, a0, a1, a2, a3, a4, a5, a6], run in order on the sample's uint8
// RGB crop after the resample and before the dtype conversion / normalisation. Each kernel follows
// torchvision.transforms.v2.functional on a uint8 [3, H, W] tensor (float32 arithmetic, the same
// rounding and truncation); the exceptions are named at the kernel. Codes 14..16 and 20..23 follow Pillow (what
// torchvision's transforms and timm's ops do to PIL images) instead.
//
// The mix rows (17..19) mix augmentation chains as AugMix does: MixBegin keeps a copy of the image (the
// chains' source) and starts a float32 sum with w0 * image; each chain is the rows after it up to a MixAdd,
// which adds w * image to the sum (float32 product, then float32 sum) and puts the source back; MixEnd turns
// the sum into the image. A sample's mix rows nest: MixBegin, (rows, MixAdd)*, MixEnd, no mix inside a mix
// (validate_program).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace spdl_torch::core::augment {

enum class Code : int {
  None = 0,          // padding
  Affine = 1,        // a0 angle (deg), a1 tx (px), a2 ty (px), a3 shear x (deg), a4 shear y (deg),
                     // a5 interpolation (0 nearest, 1 bilinear), a6 fill (0..255; -1: fill=None)
  Brightness = 2,    // a0 factor >= 0
  Contrast = 3,      // a0 factor >= 0
  Saturation = 4,    // a0 factor >= 0
  Hue = 5,           // a0 in [-0.5, 0.5]
  Sharpness = 6,     // a0 factor >= 0
  Posterize = 7,     // a0 bits, an integer 0..8
  Solarize = 8,      // a0 threshold (on 0..255)
  Autocontrast = 9,
  Equalize = 10,
  Invert = 11,
  Grayscale = 12,    // 3 output channels
  GaussianBlur = 13, // a0 kernel x, a1 kernel y (odd, >= 1), a2 sigma x, a3 sigma y (> 0)
  // Pillow's rules (what timm's ops and torchvision's transforms do to PIL images):
  Fill = 14,         // a0, a1, a2: R, G, B (integers 0..255): the fill of the sample's following PilAffine rows
                     // (0, 0, 0 at the start of each sample's program, Pillow's default)
  PilAffine = 15,    // a0..a5: Pillow's AFFINE data (a, b, c, d, e, f): output (x, y) samples the input at
                     // (a x' + b y' + c, d x' + e y' + f), x' = x + 0.5, y' = y + 0.5; a6 resample 0 NEAREST,
                     // 1 BILINEAR, 2 BICUBIC; = img.transform(img.size, Image.AFFINE, data, resample, fillcolor)
  SolarizeAdd = 16,  // a0 add (integer 0..255), a1 threshold (0..256): v < threshold -> min(255, v + add)
  MixBegin = 17,     // a0 w0 >= 0: source = image, sum = w0 * image
  MixAdd = 18,       // a0 w >= 0: sum += w * image, image = source
  MixEnd = 19,       // a0 mode: 0 image = trunc(clamp(sum, 0, 255)) (torchvision's AugMix); 1 mixed = the
                     // same, image = Pillow's Image.blend(source, mixed, a1), a1 in [0, 1] (timm's AugMixAugment)
  // more of Pillow's rules:
  PilAffineLow = 20,     // a0..a5 (finite): added, in double, to the AFFINE data of the sample's next PilAffine row
                         // (data = row value + the sum of the low rows before it; cleared there): Pillow's double
                         // coefficients travel as float32 hi + mid + lo parts, exactly
  PilEnhance = 21,       // a0 enhancer 0 Brightness, 1 Color, 2 Contrast, 3 Sharpness; a1 factor >= 0:
                         // ImageEnhance.<enhancer>(img).enhance(a1)
  PilHue = 22,           // a0 shift (integer 0..255): convert("HSV"), H += shift modulo 256, convert("RGB")
                         // (torchvision's PIL adjust_hue: shift = int(hue_factor * 255) modulo 256)
  PilAutocontrast = 23,  // ImageOps.autocontrast(img)
};

constexpr int kColumns = 8;       // a program row: code + 7 arguments
constexpr int kMaxCode = 23;
constexpr float kNoFill = -1.0f;  // affine a6: torchvision's fill=None (zeros padding, no mask blend)

// Erase rows (after normalisation, in the slot's dtype): [apply, top, left, height, width, v0, v1, v2].
constexpr int kEraseColumns = 8;
enum class EraseMode : int { Off = 0, Value = 1, Random = 2 };

// An interleaved RGB uint8 image, rows width * 3 bytes apart.
struct RgbImage {
  uint8_t* data = nullptr;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pixels() const { return height * width; }
};

// Throws InvalidArgument naming `where` (e.g. "augment[3, 1]") for a row whose code is not supported
// ("augment code N not supported") or whose arguments are out of range. Code 0 rows are accepted whatever
// their arguments.
void validate_step(const float* row, const std::string& where);

// Throws InvalidArgument naming `where` for an erase row out of range (apply not 0/1/2, a negative or
// non-integer box).
void validate_erase(const float* row, const std::string& where);

// validate_step on each of a sample's `steps` rows (row k named where(k)), and the nesting of its mix rows:
// a MixAdd or MixEnd outside a mix, a MixBegin inside one, or a mix still open after the last row throws
// InvalidArgument naming the row.
void validate_program(const float* rows, int64_t steps, const std::function<std::string(int64_t)>& where);

// Whether any of the `steps` rows is not a no-op.
bool has_program(const float* rows, int64_t steps);

// Runs the rows in order on `image` in place (rows must be valid: validate_program).
void run_program(const float* rows, int64_t steps, const RgbImage& image);

}  // namespace spdl_torch::core::augment
