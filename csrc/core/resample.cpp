// SPDX-License-Identifier: BSD-3-Clause
// resample.h's window weights (AxisWeights) and the dispatch between the AVX2 and the generic kernel.
#include "core/resample.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/detail/pixels/resample_avx2.h"
#include "core/detail/pixels/resample_slot_writer.h"
#include "core/errors.h"

namespace spdl_torch::core {
namespace {

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double cubic(double x) {  // Keys, a = -0.5
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

}  // namespace

AxisWeights::AxisWeights(const AxisMap& m, int64_t in_size, int64_t out, ResampleFilter filter, bool mirror)
    : out_size(out) {
  if (out <= 0 || in_size <= 0 || !(m.scale > 0)) {
    throw InvalidArgument("resample: expected positive sizes and scale, got in " + std::to_string(in_size) +
                          ", out " + std::to_string(out) + ", scale " + std::to_string(m.scale));
  }
  if (filter == ResampleFilter::Nearest || filter == ResampleFilter::NearestExact) {
    build_nearest(m, in_size, filter == ResampleFilter::NearestExact, mirror);
    return;
  }
  const double base_support = filter == ResampleFilter::Bilinear ? 1.0 : 2.0;
  const double support = m.scale >= 1.0 ? base_support * m.scale : base_support;
  const double inv = m.scale >= 1.0 ? 1.0 / m.scale : 1.0;
  taps = int64_t(std::ceil(support)) * 2 + 1;
  start.assign(size_t(out), 0);
  count.assign(size_t(out), 0);
  weights.assign(size_t(out * taps), 0.0f);
  const int64_t lo_limit = std::clamp<int64_t>(m.clip_lo, 0, in_size);
  const int64_t hi_limit = std::clamp<int64_t>(m.clip_hi, 0, in_size);
  src_lo = in_size;
  src_hi = 0;
  std::vector<double> w(static_cast<size_t>(taps));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t v = m.first + o;
    const int64_t slot = mirror ? out - 1 - o : o;
    if (v < 0 || v >= m.virtual_size) continue;  // padding: count stays 0
    const double center = m.origin + (double(v) + 0.5) * m.scale;
    const int64_t xmin = std::max<int64_t>(int64_t(std::floor(center - support + 0.5)), lo_limit);
    const int64_t xmax = std::min<int64_t>(int64_t(std::floor(center + support + 0.5)), hi_limit);
    const int64_t n = std::min<int64_t>(xmax - xmin, taps);
    if (n <= 0) continue;
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double x = (double(xmin + j) - center + 0.5) * inv;
      w[size_t(j)] = filter == ResampleFilter::Bilinear ? triangle(x) : cubic(x);
      total += w[size_t(j)];
    }
    // Zero weights at either end of the window (a tap exactly at the filter's edge) do no work.
    int64_t first_tap = 0, last_tap = n;
    while (first_tap < last_tap && w[size_t(first_tap)] == 0.0) ++first_tap;
    while (last_tap > first_tap && w[size_t(last_tap - 1)] == 0.0) --last_tap;
    if (last_tap == first_tap || total == 0.0) continue;
    float* dst = &weights[size_t(slot * taps)];
    for (int64_t j = first_tap; j < last_tap; ++j) dst[j - first_tap] = float(w[size_t(j)] / total);
    start[size_t(slot)] = xmin + first_tap;
    count[size_t(slot)] = last_tap - first_tap;
    src_lo = std::min(src_lo, xmin + first_tap);
    src_hi = std::max(src_hi, xmin + last_tap);
  }
  if (src_hi < src_lo) src_lo = src_hi = 0;  // all padding
}

void AxisWeights::build_nearest(const AxisMap& m, int64_t in_size, bool exact, bool mirror) {
  // The resized extent's source length (the map's scale is length / virtual_size) and torch's float32
  // index rule (aten/native/UpSample.h: nearest_idx, nearest_exact_idx).
  const int64_t length = std::max<int64_t>(int64_t(std::llround(m.scale * double(m.virtual_size))), 1);
  const int64_t base = int64_t(std::llround(m.origin));
  const float s = float(length) / float(m.virtual_size);
  const int64_t lo_limit = std::clamp<int64_t>(m.clip_lo, 0, in_size);
  const int64_t hi_limit = std::clamp<int64_t>(m.clip_hi, 0, in_size);
  taps = 1;
  start.assign(size_t(out_size), 0);
  count.assign(size_t(out_size), 0);
  weights.assign(size_t(out_size), 1.0f);
  src_lo = in_size;
  src_hi = 0;
  for (int64_t o = 0; o < out_size; ++o) {
    const int64_t v = m.first + o;
    const int64_t slot = mirror ? out_size - 1 - o : o;
    if (v < 0 || v >= m.virtual_size) continue;  // padding
    int64_t idx;
    if (length == m.virtual_size) {
      idx = v;
    } else if (exact) {
      idx = int64_t(std::floor(float((double(v) + 0.5) * double(s))));
    } else if (m.virtual_size == 2 * length) {
      idx = v >> 1;
    } else {
      idx = int64_t(std::floor(float(v) * s));
    }
    idx = std::min(idx, length - 1) + base;
    if (idx < lo_limit || idx >= hi_limit) continue;
    start[size_t(slot)] = idx;
    count[size_t(slot)] = 1;
    src_lo = std::min(src_lo, idx);
    src_hi = std::max(src_hi, idx + 1);
  }
  if (src_hi < src_lo) src_lo = src_hi = 0;
}

void AxisWeights::shift(int64_t offset) {
  if (offset < 0 || offset > src_lo) {
    throw InternalError("resample: expected a shift in [0, " + std::to_string(src_lo) + "], got " +
                        std::to_string(offset));
  }
  for (size_t o = 0; o < start.size(); ++o) {
    if (count[o] > 0) start[o] -= offset;  // padding windows (count 0) read nothing
  }
  src_lo -= offset;
  src_hi -= offset;
}

void SlotWriter::zero() const {
  const int64_t elem = type == OutType::UInt8 ? 1 : type == OutType::Float32 ? 4 : 2;
  for (int c = 0; c < channels; ++c)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        std::memset(data + (c * stride_c + y * stride_h + x * stride_w) * elem, 0, size_t(elem));
}

void resample_into(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                   const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out) {
#if defined(SPDL_TORCH_RESAMPLE_AVX2)
  if (out.channels == 3 && out.gray == GrayRule::None && resample_avx2_available()) {
    detail::check_resample_args(src_height, src_width, src_row_bytes, wy, wx, out);
    detail::resample_rgb_avx2(src, src_row_bytes, wy, wx, out);
    return;
  }
#endif
  resample_into_generic(src, src_height, src_width, src_row_bytes, wy, wx, out);
}

bool resample_avx2_available() {
#if defined(SPDL_TORCH_RESAMPLE_AVX2)
  static const bool available = __builtin_cpu_supports("avx2") && std::getenv("SPDL_TORCH_DISABLE_AVX2") == nullptr;
  return available;
#else
  return false;
#endif
}

}  // namespace spdl_torch::core
