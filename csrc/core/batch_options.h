// SPDX-License-Identifier: BSD-3-Clause
// The options of the fused batch transform (decode_batch) and their validation: the ops fill the struct
// and call validate(), so every caller (ops, fuzzers, tests) gets the same checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/image_types.h"
#include "core/resample.h"

namespace spdl_torch::core {

enum class GeometryMode {
  Eval,    // shorter side -> resize_shorter (0: keep), centre crop height x width (torchvision's rules)
  Resize,  // whole image -> height x width
  Train,   // RandomResizedCrop(height x width, scale, ratio)
  RandomCrop,  // shorter side -> resize_shorter (0: keep), zero padding, RandomCrop(height x width)
};

GeometryMode parse_geometry_mode(const std::string& name);  // "eval", "resize", "train", "random_crop"
// "bilinear", "bicubic", "nearest", "nearest_exact"
ResampleFilter parse_resample_filter(const std::string& name);
// "rgb", "gray" (torchvision's tensor rule), "gray_pil" (Pillow's convert("L"))
GrayRule parse_color(const std::string& name);

struct BatchOptions {
  GeometryMode geometry = GeometryMode::Eval;
  int64_t height = 0;  // output size, 1..65536
  int64_t width = 0;
  int64_t resize_shorter = 0;  // eval, random_crop: the shorter side before the crop (0: no resize)
  // eval, random_crop: torchvision's Resize max_size (0: none): a longer side above it after the resize
  // is scaled down to it; with resize_shorter 0 the longer side becomes max_size (v2's Resize(None, max_size)).
  int64_t max_size = 0;
  // random_crop: RandomCrop's zero padding [left, top, right, bottom] of the resized image (empty: none)
  // and pad_if_needed (pad both sides of an axis shorter than the crop by the difference).
  std::vector<int64_t> padding;
  bool pad_if_needed = false;
  std::vector<double> scale = {0.08, 1.0};  // train: [lo, hi] area fraction, 0 < lo <= hi
  std::vector<double> ratio = {3.0 / 4.0, 4.0 / 3.0};  // train: [lo, hi] aspect ratio (w / h), 0 < lo <= hi
  double hflip_prob = 0.0;  // 0..1
  double vflip_prob = 0.0;  // 0..1, drawn after the horizontal flip
  ResampleFilter filter = ResampleFilter::Bilinear;
  bool apply_exif_orientation = true;
  int64_t max_pixels = kDefaultMaxPixels;  // width * height above this is a DecodeError; <= 0: no limit
  // JPEG DCT scaling: decode at the smallest factor f of 1/8, 1/4, 1/2, 1 with f * (source pixels per
  // output pixel) >= dct_min_ratio on both axes; 0 disables it. 2 (default, as Pillow's reducing_gap)
  // keeps an antialiased >= 2x downscale after the DCT scaling; 1 is the fastest.
  double dct_min_ratio = 2.0;
  // JPEG without EXIF rotation: decode only the rows and (iMCU-aligned) columns the crop's resize windows
  // read (libjpeg's jpeg_skip_scanlines / jpeg_crop_scanline). Same pixels as a full decode; false decodes
  // the whole (DCT-scaled) image, for comparison.
  bool partial_decode = true;
  // The slots' element type and normalization: (x / 255 - mean) / std per channel for float types;
  // mean and std hold 1 value (all channels) or 3 (R, G, B), or none (no normalization).
  OutType out_type = OutType::UInt8;
  std::vector<double> mean;
  std::vector<double> std;
  // Grayscale (torchvision's Grayscale / Pillow's convert("L") of the resized RGB pixels) and the number
  // of output channels: 3 (RGB, or grey replicated) or 1 (grey only).
  GrayRule gray = GrayRule::None;
  int num_output_channels = 3;

  // Throws InvalidArgument("expected ...") for the first option out of its range (the ops prefix the
  // op's name).
  void validate() const;

  bool random() const {  // needs seeds
    return geometry == GeometryMode::Train || geometry == GeometryMode::RandomCrop || hflip_prob > 0 || vflip_prob > 0;
  }
  bool normalize() const { return !mean.empty() || !std.empty(); }
  float channel_mean(int c) const;  // mean of channel c (0 without normalization)
  float channel_std(int c) const;   // std of channel c (1 without normalization)
};

}  // namespace spdl_torch::core
