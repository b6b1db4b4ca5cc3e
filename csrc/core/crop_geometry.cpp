// SPDX-License-Identifier: BSD-3-Clause
#include "core/crop_geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core {

uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

double SplitMix64::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t SplitMix64::randint(int64_t n) {
  if (n <= 1) {
    next();  // keep the number of draws independent of n
    return 0;
  }
  return std::min<int64_t>(int64_t(uniform() * double(n)), n - 1);
}

int64_t round_half_even(double x) {
  const double r = std::round(x);  // ties away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) return 2 * int64_t(std::round(x / 2.0));
  return int64_t(r);
}

CropBox random_resized_crop_box(int64_t height, int64_t width, double scale_lo, double scale_hi, double ratio_lo,
                                double ratio_hi, SplitMix64& rng) {
  const double area = double(height) * double(width);
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      CropBox box;
      box.height = h;
      box.width = w;
      box.top = rng.randint(height - h + 1);
      box.left = rng.randint(width - w + 1);
      return box;
    }
  }
  CropBox box;
  const double in_ratio = double(width) / double(height);
  if (in_ratio < std::min(ratio_lo, ratio_hi)) {
    box.width = width;
    box.height = round_half_even(double(width) / std::min(ratio_lo, ratio_hi));
  } else if (in_ratio > std::max(ratio_lo, ratio_hi)) {
    box.height = height;
    box.width = round_half_even(double(height) * std::max(ratio_lo, ratio_hi));
  } else {
    box.width = width;
    box.height = height;
  }
  box.top = (height - box.height) / 2;
  box.left = (width - box.width) / 2;
  return box;
}

AxisMap eval_axis(int64_t in_size, int64_t other_in, int64_t resize_shorter, int64_t out_size) {
  AxisMap m;
  int64_t resized = in_size;
  if (resize_shorter > 0) {
    if (in_size <= other_in) {
      resized = resize_shorter;
    } else {  // this axis is the longer one: int(S * long / short), as torchvision
      resized = int64_t(double(resize_shorter) * double(in_size) / double(other_in));
    }
  }
  m.virtual_size = resized;
  m.scale = double(in_size) / double(resized);
  m.origin = 0;
  m.first = out_size > resized ? -((out_size - resized) / 2) : round_half_even(double(resized - out_size) / 2.0);
  m.clip_lo = 0;
  m.clip_hi = in_size;
  return m;
}

ResizedSize resized_size(int64_t height, int64_t width, int64_t resize_shorter, int64_t max_size) {
  const bool w_short = width <= height;  // torchvision: short, long = (w, h) if w <= h else (h, w)
  const int64_t short_in = w_short ? width : height, long_in = w_short ? height : width;
  int64_t new_short = short_in, new_long = long_in;
  if (resize_shorter > 0) {
    new_short = resize_shorter;
    new_long = int64_t(double(resize_shorter * long_in) / double(short_in));
    if (max_size > 0 && new_long > max_size) {
      new_short = int64_t(double(max_size * new_short) / double(new_long));
      new_long = max_size;
    }
  } else if (max_size > 0) {
    new_short = int64_t(double(max_size * short_in) / double(long_in));
    new_long = max_size;
  }
  ResizedSize r;
  r.height = w_short ? new_long : new_short;
  r.width = w_short ? new_short : new_long;
  // A thin image (e.g. 4 x 30000 with max_size 80) would have a side of 0 pixels: torchvision raises there (its
  // resize refuses an output size of 0), so do we, rather than fill a crop from one column and zero padding.
  if (new_short < 1) {
    throw InvalidArgument("Resize: max_size " + std::to_string(max_size) + " makes the " + std::to_string(height) +
                          "x" + std::to_string(width) + " image " + std::to_string(r.height) + "x" +
                          std::to_string(r.width) + " (a side of 0 pixels); torchvision raises here too");
  }
  return r;
}

AxisMap window_axis(int64_t in_size, int64_t resized, int64_t first) {
  AxisMap m;
  m.virtual_size = resized;
  m.scale = double(in_size) / double(resized);
  m.first = first;
  m.clip_hi = in_size;
  return m;
}

CropRange random_crop_range(int64_t resized, int64_t pad_lo, int64_t pad_hi, bool pad_if_needed, int64_t out_size) {
  CropRange r;
  r.pad_lo = pad_lo;
  r.padded = resized + pad_lo + pad_hi;
  if (pad_if_needed && r.padded < out_size) {
    const int64_t diff = out_size - r.padded;
    r.pad_lo += diff;
    r.padded += 2 * diff;
  }
  r.offsets = r.padded - out_size + 1;
  return r;
}

AxisMap resize_axis(int64_t in_size, int64_t out_size) {
  AxisMap m;
  m.virtual_size = out_size;
  m.scale = double(in_size) / double(out_size);
  m.clip_hi = in_size;
  return m;
}

AxisMap crop_axis(int64_t in_size, int64_t start, int64_t length, int64_t out_size) {
  AxisMap m;
  m.origin = double(start);
  m.scale = double(length) / double(out_size);
  m.virtual_size = out_size;
  m.clip_lo = std::clamp<int64_t>(start, 0, in_size);
  m.clip_hi = std::clamp<int64_t>(start + length, 0, in_size);
  return m;
}

AxisMap scale_axis(const AxisMap& m, int64_t in_size, int64_t scaled_size) {
  if (scaled_size == in_size) return m;
  const double f = double(scaled_size) / double(in_size);
  AxisMap s = m;
  s.origin = m.origin * f;
  s.scale = m.scale * f;
  s.clip_lo = std::clamp<int64_t>(int64_t(std::floor(double(m.clip_lo) * f + 1e-9)), 0, scaled_size);
  s.clip_hi = std::clamp<int64_t>(int64_t(std::ceil(double(m.clip_hi) * f - 1e-9)), 0, scaled_size);
  return s;
}

}  // namespace spdl_torch::core
