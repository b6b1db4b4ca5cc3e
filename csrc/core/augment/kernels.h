// SPDX-License-Identifier: BSD-3-Clause
// The augmentation kernels, in place on an interleaved RGB uint8 image; each equals
// torchvision.transforms.v2.functional's kernel of the same name on a uint8 [3, H, W] tensor (its float32
// arithmetic, rounding and truncation) unless its comment says otherwise. Arguments are valid
// (augment::validate_step). The rows reach them through their runners (program.h), defined beside them.
#pragma once

#include <cstdint>

#include "core/augment/ops.h"
#include "core/augment/program.h"

namespace spdl_torch::core::augment {

// affine.cpp: affine(img, angle, [tx, ty], 1.0, [shear_x, shear_y], interpolation, fill), centre = the
// image centre, output size = input size. fill < 0: fill=None (grid_sample's zero padding only).
void affine(const RgbImage& img, double angle, double tx, double ty, double shear_x, double shear_y, bool bilinear,
            float fill);

// pil_affine.cpp (Pillow's rule, not torchvision's): img.transform(img.size, Image.AFFINE, m, resample,
// fillcolor=fill) of a Pillow RGB image; m = the 6 AFFINE coefficients (a, b, c, d, e, f), resample the index of
// pil_affine's resample choice (NEAREST, BILINEAR, BICUBIC), fill = 3 bytes (R, G, B).
void pil_affine(const RgbImage& img, const double* m, int resample, const uint8_t* fill);

// pil_color.cpp (Pillow's rules, what torchvision's transforms do to a PIL image):
// ImageEnhance.<enhancer>(img).enhance(factor) (Image.blend with the enhancer's degenerate image), factor >= 0.
enum class Enhancer : int {
  Brightness = choice_index(Code::PilEnhance, "enhancer", "Brightness"),
  Color = choice_index(Code::PilEnhance, "enhancer", "Color"),
  Contrast = choice_index(Code::PilEnhance, "enhancer", "Contrast"),
  Sharpness = choice_index(Code::PilEnhance, "enhancer", "Sharpness"),
};
void pil_enhance(const RgbImage& img, Enhancer enhancer, float factor);
// torchvision's PIL adjust_hue: convert("HSV"), H += shift (modulo 256, 0..255), convert("RGB").
void pil_hue(const RgbImage& img, int shift);
// ImageOps.autocontrast(img): per channel, Pillow's double-precision table.
void pil_autocontrast(const RgbImage& img);

// color.cpp
void adjust_brightness(const RgbImage& img, float factor);
void adjust_contrast(const RgbImage& img, float factor);
void adjust_saturation(const RgbImage& img, float factor);
void adjust_hue(const RgbImage& img, float hue_factor);
void posterize(const RgbImage& img, int bits);
void solarize(const RgbImage& img, float threshold);
// timm's solarize_add (not torchvision's): a value v < threshold becomes min(255, v + add), add in 0..255.
void solarize_add(const RgbImage& img, int add, float threshold);
void invert(const RgbImage& img);
void rgb_to_grayscale(const RgbImage& img);  // num_output_channels=3

// histogram.cpp: per channel
void autocontrast(const RgbImage& img);
void equalize(const RgbImage& img);

// filter.cpp
void adjust_sharpness(const RgbImage& img, float factor);
// gaussian_blur(img, [kernel_x, kernel_y], [sigma_x, sigma_y]) with reflect padding. Where the padding
// reaches past the image (kernel_size // 2 >= the side; torch's reflect pad raises there) the
// reflection folds again.
void gaussian_blur(const RgbImage& img, int kernel_x, int kernel_y, float sigma_x, float sigma_y);

// mix.cpp: AugMix's mix of chains (the mix_begin / mix_add / mix_end rows), torchvision's AugMix.forward:
// mix = w0 * image, mix.add_(w * chain) per chain, mix.to(uint8); `mix` holds the source and the float32 sum from
// mix_begin to mix_end, on images of one size (a mix_add or mix_end without its mix_begin: InternalError).
void mix_begin(const RgbImage& img, float w0, MixState& mix);
void mix_add(const RgbImage& img, float w, MixState& mix);
// image = trunc(clamp(sum, 0, 255)) blended with the source as Pillow's Image.blend(source, mixed, alpha) does:
// trunc(src + alpha * (mixed - src)) in float32 (timm's AugMixAugment._apply_basic); alpha 1 gives the mix itself.
void mix_end(const RgbImage& img, float alpha, MixState& mix);

}  // namespace spdl_torch::core::augment
