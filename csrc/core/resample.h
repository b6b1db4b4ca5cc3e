// SPDX-License-Identifier: BSD-3-Clause
// Antialiased separable resampling of an 8-bit HWC image into one slot of a batch, in the slot's dtype and
// layout, with normalization fused. The filters follow PIL's Resample.c / torchvision's antialiased
// interpolate: for a downscale by s the filter's support is scaled by s, each output pixel gets a window of
// source pixels with weights filter((x - centre + 0.5) / max(s, 1)) normalized to sum 1.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/crop_geometry.h"

namespace spdl_torch::core {

// Bilinear: triangle; Bicubic: Keys cubic with a = -0.5 (PIL, torchvision), both antialiased. Nearest:
// source pixel floor(o * in / out) (torch's "nearest", float32 arithmetic); NearestExact: floor((o + 0.5)
// * in / out) (torch's "nearest-exact", Pillow's NEAREST). The nearest filters take one source pixel per
// output pixel (no antialiasing, as torchvision).
enum class ResampleFilter { Bilinear, Bicubic, Nearest, NearestExact };

// Grey from the resized RGB values (0..255): None (RGB); Torchvision: trunc(0.2989 R + 0.587 G + 0.114 B)
// in float32 (torchvision's rgb_to_grayscale of a uint8 tensor); Pillow: (R * 19595 + G * 38470 +
// B * 7471 + 0x8000) >> 16 (Pillow's convert("L"), ITU-R 601-2).
enum class GrayRule { None, Torchvision, Pillow };

// The precomputed window of every output pixel of one axis.
struct AxisWeights {
  int64_t out_size = 0;
  int64_t taps = 0;             // window capacity per output pixel
  std::vector<int64_t> start;   // first source pixel of output o's window
  std::vector<int64_t> count;   // window length (0: a zero / padding pixel)
  std::vector<float> weights;   // out_size * taps, normalized
  int64_t src_lo = 0;           // union of all windows: [src_lo, src_hi)
  int64_t src_hi = 0;

  // Builds the windows of `out_size` outputs for map `m` over a source of `in_size` pixels; `mirror`
  // reverses the outputs (horizontal flip).
  AxisWeights(const AxisMap& m, int64_t in_size, int64_t out_size, ResampleFilter filter, bool mirror);

  // Re-bases the windows on a source that starts `offset` pixels later (a decoded sub-region).
  void shift(int64_t offset);

 private:
  void build_nearest(const AxisMap& m, int64_t in_size, bool exact, bool mirror);
};

enum class OutType { UInt8, Float32, BFloat16 };

// Where and how one sample is written: element strides of channel, row and column from `data`.
struct SlotWriter {
  uint8_t* data = nullptr;
  OutType type = OutType::UInt8;
  int64_t stride_c = 0;
  int64_t stride_h = 0;
  int64_t stride_w = 0;
  int64_t height = 0;
  int64_t width = 0;
  int channels = 3;          // output channels: 3, or 1..4 of the source's without gray
  GrayRule gray = GrayRule::None;  // grey from a 3-channel source into 1 or 3 (replicated) channels
  bool normalize = false;   // float outputs: (x / 255 - mean) / std; else x / 255
  float mean[4] = {0, 0, 0, 0};
  float std[4] = {1, 1, 1, 1};

  void zero() const;  // fills the slot with zeros (a failed sample)
  int source_channels() const { return gray == GrayRule::None ? channels : 3; }
};

// Resamples src (HWC uint8, `channels` channels, rows `src_row_bytes` apart, src_height x src_width)
// through the two axes' windows into the slot. The 8-bit result of the resize is rounded to 0..255 first
// (the value torchvision's uint8 resize produces), then converted to the slot's dtype.
void resample_into(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                   const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out);

// resample_into without the AVX2 path (the reference its AVX2 path must equal bit for bit; tests).
void resample_into_generic(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                           const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out);

// Whether resample_into takes its AVX2 path for 3-channel slots: x86-64 built with GCC or Clang, a CPU with
// AVX2, and no SPDL_TORCH_DISABLE_AVX2 in the environment (read once).
bool resample_avx2_available();

// float -> bfloat16 bits, round to nearest even (as torch's conversion). Inline: once per output value.
inline uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value)) return 0x7FC0;
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

}  // namespace spdl_torch::core
