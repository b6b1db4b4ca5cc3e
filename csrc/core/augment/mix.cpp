// AugMix's mix of augmentation chains: a float32 weighted sum of the chains' results (torchvision's AugMix:
// `mix = m0 * image; mix.add_(w_i * chain_i); mix.to(uint8)`), kept per thread between the program's rows.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/simd.h"
#include "core/errors.h"

namespace spdl_torch::core::augment {
namespace {

constexpr size_t kKeepBytes = size_t(16) << 20;  // larger buffers are released after the mix

// The chains' source and the running sum of the mix in progress on this thread.
struct MixState {
  std::vector<uint8_t> source;
  std::vector<float> sum;
};

// This thread's mix, checked to hold a sum of `n` values (a mix_begin on an image of this size).
MixState& state(size_t n, const char* op) {
  thread_local MixState s;
  if (op != nullptr && s.sum.size() != n) throw InternalError(std::string("augment: ") + op + " outside a mix");
  return s;
}

inline uint8_t clamp_trunc(float v) { return uint8_t(int32_t(std::min(std::max(v, 0.0f), 255.0f))); }

SPDL_TORCH_AUGMENT_CLONES
void scale_into(float* sum, const uint8_t* px, size_t n, float w) {
  for (size_t i = 0; i < n; ++i) sum[i] = w * float(px[i]);
}

SPDL_TORCH_AUGMENT_CLONES
void add_scaled(float* sum, const uint8_t* px, size_t n, float w) {
  // a product rounded to float32, then the sum (-ffp-contract=off: no fused multiply-add), as torch's
  // `mix.add_(w * aug)`
  for (size_t i = 0; i < n; ++i) {
    const float product = w * float(px[i]);
    sum[i] = sum[i] + product;
  }
}

SPDL_TORCH_AUGMENT_CLONES
void to_bytes(uint8_t* px, const float* sum, size_t n) {
  for (size_t i = 0; i < n; ++i) px[i] = clamp_trunc(sum[i]);
}

// Pillow's ImagingBlend for 0 <= alpha <= 1: (UINT8)(in1 + alpha * (in2 - in1)), in float.
SPDL_TORCH_AUGMENT_CLONES
void blend_into(uint8_t* px, const uint8_t* source, const float* sum, size_t n, float alpha) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t src = source[i], mixed = clamp_trunc(sum[i]);
    const float v = float(src) + alpha * float(mixed - src);
    px[i] = uint8_t(int32_t(v));
  }
}

}  // namespace

void mix_begin(const RgbImage& img, float w0) {
  const size_t n = size_t(img.pixels() * 3);
  MixState& s = state(n, nullptr);
  s.source.assign(img.data, img.data + n);
  s.sum.resize(n);
  scale_into(s.sum.data(), img.data, n, w0);
}

void mix_add(const RgbImage& img, float w) {
  const size_t n = size_t(img.pixels() * 3);
  MixState& s = state(n, "mix_add");
  add_scaled(s.sum.data(), img.data, n, w);
  std::memcpy(img.data, s.source.data(), n);
}

void mix_end(const RgbImage& img, int mode, float alpha) {
  const size_t n = size_t(img.pixels() * 3);
  MixState& s = state(n, "mix_end");
  if (mode == 0) {
    to_bytes(img.data, s.sum.data(), n);
  } else {
    blend_into(img.data, s.source.data(), s.sum.data(), n, alpha);
  }
  s.sum.clear();  // the mix is over
  if (s.source.capacity() > kKeepBytes) std::vector<uint8_t>().swap(s.source);
  if (s.sum.capacity() * sizeof(float) > kKeepBytes) std::vector<float>().swap(s.sum);
}

}  // namespace spdl_torch::core::augment
