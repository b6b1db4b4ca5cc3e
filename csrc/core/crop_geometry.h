// SPDX-License-Identifier: BSD-3-Clause
// Per-sample geometry of the batch transforms: the random generator, torchvision's RandomResizedCrop box
// rule, and the eval rule (shorter side -> S, then centre crop), as maps from output pixels to source pixels.
#pragma once

#include <cstdint>

namespace spdl_torch::core {

// The per-sample random generator: SplitMix64 (Steele, Lea, Flood 2014) started from the sample's int64
// seed (as uint64). Each next() adds 0x9E3779B97F4A7C15 to the state and returns the mixed state; uniform()
// is the top 53 bits of next() scaled to [0, 1). A sample's draws depend only on its seed.
class SplitMix64 {
 public:
  explicit SplitMix64(int64_t seed) : state_(uint64_t(seed)) {}
  uint64_t next();
  double uniform();                            // [0, 1)
  double uniform(double lo, double hi);        // lo + (hi - lo) * uniform()
  int64_t randint(int64_t n);                  // floor(uniform() * n), in [0, n) for n >= 1

 private:
  uint64_t state_;
};

// Python's round(): to the nearest integer, ties to even.
int64_t round_half_even(double x);

struct CropBox {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// torchvision.transforms.v2.RandomResizedCrop.make_params for an image of height x width, with draws from
// `rng` in this order: per attempt (at most 10) u_area = uniform(scale_lo, scale_hi) and
// u_logratio = uniform(log(ratio_lo), log(ratio_hi)); w = round(sqrt(area * u_area * exp(u_logratio))),
// h = round(sqrt(area * u_area / exp(u_logratio))); when 0 < w <= width and 0 < h <= height:
// top = randint(height - h + 1), left = randint(width - w + 1). Otherwise the deterministic fallback:
// the central crop of the whole image clamped to the ratio range.
CropBox random_resized_crop_box(int64_t height, int64_t width, double scale_lo, double scale_hi, double ratio_lo,
                                double ratio_hi, SplitMix64& rng);

// Maps output pixels of one axis to source pixels: output o is virtual pixel v = first + o of a resized
// image of virtual_size pixels (outside [0, virtual_size) it is zero padding); v's sampling centre in
// source coordinates is origin + (v + 0.5) * scale, and its filter window is clipped to [clip_lo, clip_hi).
struct AxisMap {
  double origin = 0;
  double scale = 1;  // source pixels per output pixel
  int64_t first = 0;
  int64_t virtual_size = 0;
  int64_t clip_lo = 0;
  int64_t clip_hi = 0;
};

// Eval: resize so the shorter side is `resize_shorter` (0: no resize; torchvision's Resize(int) size rule,
// long = int(S * long / short)), then centre crop out_size as torchvision's CenterCrop (offset
// round((R - out) / 2), zero padding centred when out > R). `in_size`/`other_in` are this axis's and the
// other axis's source sizes.
AxisMap eval_axis(int64_t in_size, int64_t other_in, int64_t resize_shorter, int64_t out_size);

// torchvision's Resize(int) output size (_compute_resized_output_size) of an image of height x width:
// the shorter side -> resize_shorter and the longer int(S * long / short); then, with max_size > 0, a
// longer side above max_size -> max_size and the shorter int(max_size * short' / long'). resize_shorter 0
// with max_size > 0: the longer side -> max_size (v2's Resize(None, max_size)); both 0: the input size.
struct ResizedSize {
  int64_t height = 0;
  int64_t width = 0;
};
ResizedSize resized_size(int64_t height, int64_t width, int64_t resize_shorter, int64_t max_size);

// An axis of in_size source pixels resized to `resized` pixels, of which the output shows virtual pixels
// first .. first + out_size - 1 (outside [0, resized): zero padding).
AxisMap window_axis(int64_t in_size, int64_t resized, int64_t first);

// torchvision's RandomCrop offset rule on one axis of a resized image of `resized` pixels with zero
// padding pad_lo / pad_hi (pad_if_needed: both sides grow by out - padded when the padded axis is shorter
// than the crop): the number of valid offsets (padded - out + 1, < 1 when the crop does not fit), and the
// padding before the image.
struct CropRange {
  int64_t offsets = 0;
  int64_t pad_lo = 0;
  int64_t padded = 0;
};
CropRange random_crop_range(int64_t resized, int64_t pad_lo, int64_t pad_hi, bool pad_if_needed, int64_t out_size);

// Resize the whole axis to out_size.
AxisMap resize_axis(int64_t in_size, int64_t out_size);

// Crop [start, start + length) and resize it to out_size (torchvision's resized_crop).
AxisMap crop_axis(int64_t in_size, int64_t start, int64_t length, int64_t out_size);

// The same map for the source scaled by `factor` to `scaled_size` pixels (JPEG DCT scaling).
AxisMap scale_axis(const AxisMap& m, int64_t in_size, int64_t scaled_size);

}  // namespace spdl_torch::core
