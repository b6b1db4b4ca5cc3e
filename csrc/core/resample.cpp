#include "resample.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "errors.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SPDL_TORCH_RESAMPLE_AVX2 1
#endif

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

void AxisWeights::shift(int64_t offset) {
  if (offset < 0 || offset > src_lo) {
    throw InvalidArgument("resample: expected a shift in [0, " + std::to_string(src_lo) + "], got " +
                          std::to_string(offset) + " (internal error; this is a bug)");
  }
  for (size_t o = 0; o < start.size(); ++o) {
    if (count[o] > 0) start[o] -= offset;  // padding windows (count 0) read nothing
  }
  src_lo -= offset;
  src_hi -= offset;
}

uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value)) return 0x7FC0;
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

void SlotWriter::zero() const {
  const int64_t elem = type == OutType::UInt8 ? 1 : type == OutType::Float32 ? 4 : 2;
  for (int c = 0; c < channels; ++c)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        std::memset(data + (c * stride_c + y * stride_h + x * stride_w) * elem, 0, size_t(elem));
}

namespace {

// Writes one output row of 8-bit values (already rounded; pixel x of channel c at
// values[c * channel_stride + x * pixel_stride]) into the slot.
template <typename T, typename Convert>
void write_row(const float* values, int64_t channel_stride, int64_t pixel_stride, int64_t y, const SlotWriter& out,
               Convert convert) {
  // Locals: stores through uint8_t* may alias `out`, which would reload its fields every iteration.
  T* const row = reinterpret_cast<T*>(out.data) + y * out.stride_h;
  const int ch = out.channels;
  const int64_t width = out.width, stride_w = out.stride_w, stride_c = out.stride_c;
  for (int c = 0; c < ch; ++c) {
    T* const dst = row + c * stride_c;
    const float* v = values + c * channel_stride;
    if (stride_w == 1) {
      for (int64_t x = 0; x < width; ++x) dst[x] = convert(v[x * pixel_stride], c);
    } else {
      for (int64_t x = 0; x < width; ++x) dst[x * stride_w] = convert(v[x * pixel_stride], c);
    }
  }
}

// write_row in the slot's dtype: uint8 as is, float32 / bfloat16 normalized (v * mul + add).
void write_values_row(const float* values, int64_t channel_stride, int64_t pixel_stride, int64_t y,
                      const SlotWriter& out, const float* mul, const float* add) {
  switch (out.type) {
    case OutType::UInt8:
      write_row<uint8_t>(values, channel_stride, pixel_stride, y, out, [](float v, int) { return uint8_t(v); });
      break;
    case OutType::Float32:
      write_row<float>(values, channel_stride, pixel_stride, y, out,
                       [&](float v, int c) { return v * mul[c] + add[c]; });
      break;
    case OutType::BFloat16:
      write_row<uint16_t>(values, channel_stride, pixel_stride, y, out,
                          [&](float v, int c) { return float_to_bfloat16_bits(v * mul[c] + add[c]); });
      break;
  }
}

// Float32 planar rows (stride_w 1) from RGBx pixels 4 floats apart: 4 pixels at a time, transposed to
// 4 R, 4 G, 4 B values, normalized and stored with one vector store per plane.
inline void write_rgb_planar_f32(const float* values, int64_t y, const SlotWriter& out, const float* mul,
                                 const float* add) {
  float* const r = reinterpret_cast<float*>(out.data) + y * out.stride_h;
  float* const g = r + out.stride_c;
  float* const b = g + out.stride_c;
  const int64_t width = out.width;
  int64_t x = 0;
#if defined(__SSE__)
  const __m128 mr = _mm_set1_ps(mul[0]), mg = _mm_set1_ps(mul[1]), mb = _mm_set1_ps(mul[2]);
  const __m128 ar = _mm_set1_ps(add[0]), ag = _mm_set1_ps(add[1]), ab = _mm_set1_ps(add[2]);
  for (; x + 4 <= width; x += 4) {
    __m128 p0 = _mm_loadu_ps(values + 4 * x), p1 = _mm_loadu_ps(values + 4 * x + 4);
    __m128 p2 = _mm_loadu_ps(values + 4 * x + 8), p3 = _mm_loadu_ps(values + 4 * x + 12);
    _MM_TRANSPOSE4_PS(p0, p1, p2, p3);
    _mm_storeu_ps(r + x, _mm_add_ps(_mm_mul_ps(p0, mr), ar));
    _mm_storeu_ps(g + x, _mm_add_ps(_mm_mul_ps(p1, mg), ag));
    _mm_storeu_ps(b + x, _mm_add_ps(_mm_mul_ps(p2, mb), ab));
  }
#endif
  for (; x < width; ++x) {
    r[x] = values[4 * x] * mul[0] + add[0];
    g[x] = values[4 * x + 1] * mul[1] + add[1];
    b[x] = values[4 * x + 2] * mul[2] + add[2];
  }
}

void check_resample_args(int64_t src_height, int64_t src_width, int64_t src_row_bytes, const AxisWeights& wy,
                         const AxisWeights& wx, const SlotWriter& out) {
  const int ch = out.channels;
  if (wy.out_size != out.height || wx.out_size != out.width || wy.src_hi > src_height || wx.src_hi > src_width ||
      src_row_bytes < src_width * ch || ch < 1 || ch > 4) {
    throw InvalidArgument("resample: windows do not match the source or the slot (internal error; this is a bug)");
  }
}

// (v / 255 - mean) / std == v * mul + add, per channel.
void normalization(const SlotWriter& out, float* mul, float* add) {
  for (int c = 0; c < 4; ++c) {
    const bool used = c < out.channels;
    const float sd = used && out.normalize ? out.std[c] : 1.0f;
    const float m = used && out.normalize ? out.mean[c] : 0.0f;
    mul[c] = used ? 1.0f / (255.0f * sd) : 1.0f;
    add[c] = used ? -m / sd : 0.0f;
  }
}

}  // namespace

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
// An AVX2 clone picked at load time where the CPU has it (the u8 -> float vertical pass is 8 lanes wide).
#define SPDL_TORCH_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPDL_TORCH_TARGET_CLONES
#endif

SPDL_TORCH_TARGET_CLONES
void resample_into_generic(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                           const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out) {
  const int ch = out.channels;
  check_resample_args(src_height, src_width, src_row_bytes, wy, wx, out);
  float mul[4], add[4];
  normalization(out, mul, add);
  // Per output row: the vertical pass over the columns the horizontal windows need (contiguous,
  // vectorizable), then the horizontal pass, rounding to the 8-bit value torchvision's uint8 resize gives.
  // (Measured: vertical-first is ~1.5x faster than horizontal-first here, the horizontal pass then runs on
  // floats and only over output rows.)
  const int64_t col_lo = wx.src_lo * ch;
  const int64_t cols = (wx.src_hi - wx.src_lo) * ch;
  std::vector<float> column(size_t(std::max<int64_t>(cols, 1) + 1));  // +1: 4-lane loads of the last pixel
#if defined(__GNUC__)
  // Three channels: each output pixel is one 4-lane vector (R, G, B, unused), stored 4 floats apart.
  typedef float v4 __attribute__((vector_size(16)));
  typedef int32_t v4i __attribute__((vector_size(16)));
  const bool rgb_vectors = ch == 3;
#else
  const bool rgb_vectors = false;
#endif
  const int64_t vstride = rgb_vectors ? 4 : ch;
  std::vector<float> values(size_t(out.width * vstride));
  for (int64_t y = 0; y < out.height; ++y) {
    std::fill(values.begin(), values.end(), 0.0f);
    const int64_t n = wy.count[size_t(y)];
    if (n > 0 && cols > 0) {
      const float* w = &wy.weights[size_t(y * wy.taps)];
      float* col = column.data();
      {  // first tap assigns, the others accumulate
        const uint8_t* s = src + wy.start[size_t(y)] * src_row_bytes + col_lo;
        const float w0 = w[0];
        for (int64_t k = 0; k < cols; ++k) col[k] = w0 * float(s[k]);
      }
      for (int64_t j = 1; j < n; ++j) {
        const uint8_t* s = src + (wy.start[size_t(y)] + j) * src_row_bytes + col_lo;
        const float wj = w[j];
        for (int64_t k = 0; k < cols; ++k) col[k] += wj * float(s[k]);
      }
      if (rgb_vectors) {
#if defined(__GNUC__)
        // Four lanes per pixel (the 4th lane reads the next pixel's first value and is ignored), rounded
        // half up to 0..255 in the vector (no scalar stores that stall on the vector's store).
        const v4 zero = {0, 0, 0, 0}, top = {255, 255, 255, 255}, half = {0.5f, 0.5f, 0.5f, 0.5f};
        for (int64_t x = 0; x < out.width; ++x) {
          const int64_t m = wx.count[size_t(x)];
          if (m == 0) continue;  // padding: stays 0
          const float* wh = &wx.weights[size_t(x * wx.taps)];
          const float* p = col + (wx.start[size_t(x)] - wx.src_lo) * 3;
          v4 sum = zero;
          for (int64_t j = 0; j < m; ++j, p += 3) {
            v4 px;
            std::memcpy(&px, p, sizeof(px));
            sum += wh[j] * px;
          }
          sum = sum < zero ? zero : sum;
          sum = sum > top ? top : sum;
          const v4 rounded = __builtin_convertvector(__builtin_convertvector(sum + half, v4i), v4);
          std::memcpy(&values[size_t(x * 4)], &rounded, sizeof(rounded));
        }
#endif
      } else {
        col[cols] = 0.0f;
        for (int64_t x = 0; x < out.width; ++x) {
          const int64_t m = wx.count[size_t(x)];
          const float* wh = &wx.weights[size_t(x * wx.taps)];
          const float* p = col + (wx.start[size_t(x)] - wx.src_lo) * ch;
          float acc[4] = {0, 0, 0, 0};
          for (int64_t j = 0; j < m; ++j, p += ch)
            for (int c = 0; c < ch; ++c) acc[c] += wh[j] * p[c];
          // Round half up to 0..255 (no libm call in the hot loop).
          for (int c = 0; c < ch; ++c) values[size_t(x * ch + c)] = float(int(std::clamp(acc[c], 0.0f, 255.0f) + 0.5f));
        }
      }
    }
    // Padding pixels (window count 0) hold the value 0, normalized like any other value: torchvision's
    // CenterCrop pads the uint8 image with 0 before ToDtype/Normalize.
    if (out.type == OutType::Float32 && vstride == 4 && ch == 3 && out.stride_w == 1) {
      write_rgb_planar_f32(values.data(), y, out, mul, add);
    } else {
      write_values_row(values.data(), 1, vstride, y, out, mul, add);
    }
  }
}


#if defined(SPDL_TORCH_RESAMPLE_AVX2)
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
          // not be fetched first (measured: ~15 % of this function's time went to the stores' misses).
          // Only whole 64-byte lines are streamed: a line written partly by streaming and partly by
          // ordinary stores (a row's ends) is flushed and fetched again, much slower than either.
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

}  // namespace
#endif

void resample_into(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                   const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out) {
#if defined(SPDL_TORCH_RESAMPLE_AVX2)
  if (out.channels == 3 && resample_avx2_available()) {
    check_resample_args(src_height, src_width, src_row_bytes, wy, wx, out);
    resample_rgb_avx2(src, src_row_bytes, wy, wx, out);
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
