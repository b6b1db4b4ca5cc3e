// SPDX-License-Identifier: BSD-3-Clause
#include "core/augment/erase.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/augment/ops.h"
#include "core/crop_geometry.h"

namespace spdl_torch::core::augment {
namespace {

// Box-Muller from two uniforms in [0, 1): one normal value per call (the sine half is discarded, so the
// value order is one draw pair per value).
float normal(SplitMix64& rng) {
  constexpr double kTwoPi = 6.28318530717958647692;
  const double u1 = 1.0 - rng.uniform();  // (0, 1]
  const double u2 = rng.uniform();
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2));
}

void store(const SlotWriter& out, int c, int64_t y, int64_t x, float v) {
  const int64_t offset = c * out.stride_c + y * out.stride_h + x * out.stride_w;
  switch (out.type) {
    case OutType::UInt8:
      out.data[offset] = uint8_t(std::clamp(v, 0.0f, 255.0f));
      break;
    case OutType::Float32:
      std::memcpy(out.data + offset * 4, &v, 4);
      break;
    case OutType::BFloat16: {
      const uint16_t bits = float_to_bfloat16_bits(v);
      std::memcpy(out.data + offset * 2, &bits, 2);
      break;
    }
  }
}

}  // namespace

void erase(const float* row, int64_t seed, const SlotWriter& out, int64_t box) {
  const EraseMode mode = EraseMode(int(row[0]));
  if (mode == EraseMode::Off) return;
  const int64_t top = std::min<int64_t>(int64_t(row[1]), out.height);
  const int64_t left = std::min<int64_t>(int64_t(row[2]), out.width);
  const int64_t bottom = std::min<int64_t>(top + int64_t(row[3]), out.height);
  const int64_t right = std::min<int64_t>(left + int64_t(row[4]), out.width);
  SplitMix64 rng(int64_t(uint64_t(seed) ^ kEraseStream ^ (uint64_t(box) * kEraseBoxStep)));
  for (int c = 0; c < out.channels; ++c) {
    const float value = row[5 + std::min(c, 2)];
    for (int64_t y = top; y < bottom; ++y) {
      for (int64_t x = left; x < right; ++x) store(out, c, y, x, mode == EraseMode::Random ? normal(rng) : value);
    }
  }
}

}  // namespace spdl_torch::core::augment
