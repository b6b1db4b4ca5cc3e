// SPDX-License-Identifier: BSD-3-Clause
// Arithmetic helpers that keep the kernels' float32 results bit for bit while letting GCC vectorise their
// loops (std::fma, std::nearbyint and std::floor are library calls on the baseline x86-64 target), and the
// AVX2 clone attribute for the kernels' hot functions.
#pragma once

#include <cstdint>

namespace spdl_torch::core::augment {

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
// An AVX2 clone picked at load time where the CPU has it; contraction stays off (-ffp-contract=off), so the
// clone and the portable version compute the same values.
#define SPDL_TORCH_AUGMENT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPDL_TORCH_AUGMENT_CLONES
#endif

// std::fma(a, b, c) where a is a whole number 0..255 (or its difference of two) and b, c floats of the
// kernels' ranges: a * b is exact in double (8 + 24 bits) and so is the sum (the operands span fewer than
// 53 bits), so the one rounding to float is the fused multiply-add's.
inline float fma_exact(float a, float b, float c) { return float(double(a) * double(b) + double(c)); }

// std::nearbyint(x) (round half to even) for |x| < 2^22 in the default rounding mode.
inline float round_even(float x) {
  const float magic = 12582912.0f;  // 1.5 * 2^23
  return (x + magic) - magic;
}

// std::floor(x) for 0 <= x < 2^31 (truncation is the floor there).
inline float floor_nonneg(float x) { return float(int32_t(x)); }

}  // namespace spdl_torch::core::augment
