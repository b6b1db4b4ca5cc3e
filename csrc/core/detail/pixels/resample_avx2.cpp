// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/pixels/resample_avx2.h"

#if defined(SPDL_TORCH_RESAMPLE_AVX2)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/detail/pixels/resample_slot_writer.h"

namespace spdl_torch::core::detail {
namespace {

#define SPDL_TORCH_AVX2 __attribute__((target("avx2")))

// `buffer`'s storage with room for n floats; a buffer that an unusually large image grew past 8 MiB is
// given back first, so a thread keeps at most that much between calls.
inline float* grown(std::vector<float>& buffer, int64_t n) {
  constexpr size_t kKeep = size_t(8) << 20 >> 2;
  if (buffer.capacity() > kKeep && size_t(n) <= kKeep) std::vector<float>().swap(buffer);
  if (buffer.size() < size_t(n)) buffer.resize(size_t(n));
  return buffer.data();
}

// Transposes 8 vectors of 8 floats in place (r[i][j] <-> r[j][i]).
SPDL_TORCH_AVX2 inline void transpose8(__m256* r) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// 8 bytes at p (only `n` < 8 of them readable when n < 8) as 8 floats, the missing ones 0.
SPDL_TORCH_AVX2 inline __m256 load8_u8(const uint8_t* p, int64_t n) {
  __m128i bytes;
  if (n >= 8) {
    bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  } else {
    uint8_t tmp[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(tmp, p, size_t(n));
    bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tmp));
  }
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

// The vertical pass of output rows y0..y0+7 for any window: per row and block, one converted source row
// per tap.
SPDL_TORCH_AVX2 void vertical_pass_rows(const uint8_t* src, int64_t src_row_bytes, int64_t col_lo, int64_t cols,
                                        const AxisWeights& wy, int64_t y0, int64_t nrows, float* column) {
  constexpr int R = 8;
  const int64_t blocks = (cols + R - 1) / R;
  const float* wr[R];
  const uint8_t* sr[R];
  int64_t nr[R];
  for (int r = 0; r < R; ++r) {
    const int64_t y = y0 + r;
    nr[r] = r < nrows ? wy.count[size_t(y)] : 0;  // 0: padding row (or past the slot), all 0
    wr[r] = nr[r] > 0 ? &wy.weights[size_t(y * wy.taps)] : nullptr;
    sr[r] = nr[r] > 0 ? src + wy.start[size_t(y)] * src_row_bytes + col_lo : nullptr;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * R;
    const int64_t avail = cols - k0;  // >= 8 but in the last block
    __m256 v[R];
    for (int r = 0; r < R; ++r) {
      const int64_t n = nr[r];
      if (n == 0) {
        v[r] = _mm256_setzero_ps();
        continue;
      }
      const float* w = wr[r];
      const uint8_t* s = sr[r] + k0;
      __m256 acc = _mm256_mul_ps(_mm256_set1_ps(w[0]), load8_u8(s, avail));
      for (int64_t j = 1; j < n; ++j) {
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(w[j]), load8_u8(s + j * src_row_bytes, avail)));
      }
      v[r] = acc;
    }
    transpose8(v);
    for (int i = 0; i < R; ++i) _mm256_storeu_ps(&column[size_t((k0 + i) * R)], v[i]);
  }
}

// Most source rows serve 2-3 of a group's 8 output rows. When the group's rows read at most kMaxSpan
// source rows with at most 8 taps each, every source row is converted to floats once per block of 8
// columns, and each output row sums N taps with N the group's largest window (a compile-time constant:
// no loop control, no mispredicted loop exits). A shorter window's extra taps have weight 0 (AxisWeights
// zero-fills past `count`) and read rows of the span clamped to the last row the weights reach:
// + 0 * (a value 0..255) leaves a sum unchanged (but for the sign of a zero, which the rounding after the
// horizontal pass removes), so the result is still the generic code's, bit for bit.
constexpr int64_t kMaxSpan = 32;

template <int N>
SPDL_TORCH_AVX2 void vertical_pass_span(const uint8_t* const* span_rows, int64_t span, const __m256 (*wv)[8],
                                        const int64_t* offset, int64_t cols, float* column) {
  constexpr int R = 8;
  const int64_t blocks = (cols + R - 1) / R;
  __m256 sv[kMaxSpan];
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * R;
    const int64_t avail = cols - k0;  // >= 8 but in the last block
    for (int64_t k = 0; k < span; ++k) sv[k] = load8_u8(span_rows[k] + k0, avail);
    __m256 v[R];
    for (int r = 0; r < R; ++r) {
      const __m256* s = sv + offset[r];
      __m256 acc = _mm256_mul_ps(wv[r][0], s[0]);
      for (int j = 1; j < N; ++j) acc = _mm256_add_ps(acc, _mm256_mul_ps(wv[r][j], s[j]));
      v[r] = acc;
    }
    transpose8(v);
    for (int i = 0; i < R; ++i) _mm256_storeu_ps(&column[size_t((k0 + i) * R)], v[i]);
  }
}

using VerticalPassSpan = void (*)(const uint8_t* const*, int64_t, const __m256 (*)[8], const int64_t*, int64_t, float*);
constexpr VerticalPassSpan kVerticalPassSpan[8] = {vertical_pass_span<1>, vertical_pass_span<2>, vertical_pass_span<3>,
                                                   vertical_pass_span<4>, vertical_pass_span<5>, vertical_pass_span<6>,
                                                   vertical_pass_span<7>, vertical_pass_span<8>};

// The vertical pass of output rows y0..y0+7 through vertical_pass_span; false (nothing done) when the
// rows read more than kMaxSpan source rows, a window has more than 8 taps, or no row has a window.
SPDL_TORCH_AVX2 bool vertical_pass_span_fits(const uint8_t* src, int64_t src_row_bytes, int64_t col_lo,
                                             int64_t cols, const AxisWeights& wy, int64_t y0, int64_t nrows,
                                             float* column) {
  constexpr int R = 8;
  int64_t first = -1, last = 0, taps = 1;  // source rows [first, last) of the rows with a window
  for (int r = 0; r < nrows; ++r) {
    const int64_t n = wy.count[size_t(y0 + r)];
    if (n == 0) continue;
    const int64_t s = wy.start[size_t(y0 + r)];
    first = first < 0 ? s : std::min(first, s);
    last = std::max(last, s + n);
    taps = std::max(taps, n);
  }
  if (first < 0 || taps > 8 || wy.taps < taps) return false;
  // Row r reads span values offset[r] .. offset[r] + taps - 1 <= (last - first - count[r]) + taps - 1.
  const int64_t span = last - first + taps - 1;
  if (span > kMaxSpan) return false;
  const __m256 zero = _mm256_setzero_ps();
  __m256 wv[R][8];
  int64_t offset[R];
  for (int r = 0; r < R; ++r) {
    const int64_t n = r < nrows ? wy.count[size_t(y0 + r)] : 0;
    const float* w = n > 0 ? &wy.weights[size_t((y0 + r) * wy.taps)] : nullptr;
    offset[r] = n > 0 ? wy.start[size_t(y0 + r)] - first : 0;
    for (int j = 0; j < taps; ++j) wv[r][j] = n > 0 ? _mm256_set1_ps(w[j]) : zero;
  }
  const uint8_t* span_rows[kMaxSpan];
  for (int64_t k = 0; k < span; ++k) span_rows[k] = src + std::min(first + k, last - 1) * src_row_bytes + col_lo;
  kVerticalPassSpan[taps - 1](span_rows, span, wv, offset, cols, column);
  return true;
}

}  // namespace

// The 3-channel resample of resample_into_generic, 8 output rows at a time: the vertical pass of 8 rows
// is transposed in registers so that every source value of a column holds the 8 rows in one vector; the
// horizontal pass then computes an output pixel of 8 rows with one multiply-add per tap and channel
// (the generic code: one per tap for one row). Same operations in the same order per value (multiply,
// then add; no FMA), so the result is identical to the generic code's, bit for bit.
SPDL_TORCH_AVX2 void resample_rgb_avx2(const uint8_t* src, int64_t src_row_bytes, const AxisWeights& wy,
                                       const AxisWeights& wx, const SlotWriter& out) {
  constexpr int R = 8;
  const int64_t width = out.width;
  const int64_t wpad = (width + R - 1) / R * R;
  const int64_t col_lo = wx.src_lo * 3;
  const int64_t cols = (wx.src_hi - wx.src_lo) * 3;
  const int64_t blocks = (cols + R - 1) / R;
  // Per-thread scratch, reused across calls (every element read below is written first in the same call).
  thread_local std::vector<float> column_buffer, pixels_buffer, rows_buffer;
  float* const column = grown(column_buffer, std::max<int64_t>(blocks, 1) * R * R);  // [k][r]: value k of row r
  float* const pixels = grown(pixels_buffer, 3 * wpad * R);                          // [c][x][r]
  float* const rows = grown(rows_buffer, R * 3 * wpad);                              // [r][c][x], rounded 0..255
  float mul[4], add[4];
  normalization(out, mul, add);
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f), half = _mm256_set1_ps(0.5f);
  for (int64_t y0 = 0; y0 < out.height; y0 += R) {
    const int64_t nrows = std::min<int64_t>(R, out.height - y0);
    // Vertical pass: 8 columns of 8 rows per step, transposed into column[].
    if (!vertical_pass_span_fits(src, src_row_bytes, col_lo, cols, wy, y0, nrows, column)) {
      vertical_pass_rows(src, src_row_bytes, col_lo, cols, wy, y0, nrows, column);
    }
    // Horizontal pass: output pixel x of the 8 rows, per channel, rounded half up to 0..255.
    for (int64_t x = 0; x < wpad; ++x) {
      const int64_t m = x < width ? wx.count[size_t(x)] : 0;
      __m256 a0 = zero, a1 = zero, a2 = zero;
      if (m > 0 && cols > 0) {
        const float* wh = &wx.weights[size_t(x * wx.taps)];
        const float* p = column + (wx.start[size_t(x)] - wx.src_lo) * 3 * R;
        for (int64_t j = 0; j < m; ++j, p += 3 * R) {
          const __m256 wj = _mm256_set1_ps(wh[j]);
          a0 = _mm256_add_ps(a0, _mm256_mul_ps(wj, _mm256_loadu_ps(p)));
          a1 = _mm256_add_ps(a1, _mm256_mul_ps(wj, _mm256_loadu_ps(p + R)));
          a2 = _mm256_add_ps(a2, _mm256_mul_ps(wj, _mm256_loadu_ps(p + 2 * R)));
        }
        a0 = _mm256_min_ps(_mm256_max_ps(a0, zero), top);
        a1 = _mm256_min_ps(_mm256_max_ps(a1, zero), top);
        a2 = _mm256_min_ps(_mm256_max_ps(a2, zero), top);
        a0 = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_add_ps(a0, half)));
        a1 = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_add_ps(a1, half)));
        a2 = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_add_ps(a2, half)));
      }
      _mm256_storeu_ps(&pixels[size_t(x * R)], a0);
      _mm256_storeu_ps(&pixels[size_t((wpad + x) * R)], a1);
      _mm256_storeu_ps(&pixels[size_t((2 * wpad + x) * R)], a2);
    }
    // Back to rows: 8x8 blocks of (pixel, row) transposed into planar rows.
    for (int c = 0; c < 3; ++c) {
      for (int64_t x0 = 0; x0 < wpad; x0 += R) {
        __m256 t[R];
        for (int i = 0; i < R; ++i) t[i] = _mm256_loadu_ps(&pixels[size_t((c * wpad + x0 + i) * R)]);
        transpose8(t);
        for (int r = 0; r < R; ++r) _mm256_storeu_ps(&rows[size_t((r * 3 + c) * wpad + x0)], t[r]);
      }
    }
    for (int64_t r = 0; r < nrows; ++r) {
      const float* planes = &rows[size_t(r * 3 * wpad)];
      const int64_t y = y0 + r;
      if (out.type == OutType::Float32 && out.stride_w == 1) {
        for (int c = 0; c < 3; ++c) {
          float* dst = reinterpret_cast<float*>(out.data) + y * out.stride_h + c * out.stride_c;
          const float* v = planes + c * wpad;
          const __m256 mc = _mm256_set1_ps(mul[c]), ac = _mm256_set1_ps(add[c]);
          // Streaming stores: the batch is written once and not read back here, so its cache lines need
          // not be fetched first (ordinary stores spent ~15 % of this kernel's time on those misses, float32
          // eval batches of benchmarks/bench_decode_images.py). Only whole 64-byte lines
          // are streamed: a line written partly by streaming and partly by ordinary stores (a row's ends)
          // is flushed and fetched again, much slower than either.
          int64_t x = 0;
          for (; x < width && (reinterpret_cast<uintptr_t>(dst + x) & 63) != 0; ++x) dst[x] = v[x] * mul[c] + add[c];
          for (; x + 2 * R <= width; x += 2 * R) {
            _mm256_stream_ps(dst + x, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + x), mc), ac));
            _mm256_stream_ps(dst + x + R, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + x + R), mc), ac));
          }
          for (; x < width; ++x) dst[x] = v[x] * mul[c] + add[c];
        }
      } else {
        write_values_row(planes, wpad, 1, y, out, mul, add);
      }
    }
  }
  _mm_sfence();  // the streaming stores are visible before the batch is handed over
}

}  // namespace spdl_torch::core::detail

#endif  // SPDL_TORCH_RESAMPLE_AVX2
