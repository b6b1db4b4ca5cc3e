// SPDX-License-Identifier: BSD-3-Clause
// AugMix's mix of augmentation chains: a float32 weighted sum of the chains' results (torchvision's AugMix:
// `mix = m0 * image; mix.add_(w_i * chain_i); mix.to(uint8)`), kept in the program's MixState between its rows.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/augment/kernels.h"
#include "core/augment/simd.h"
#include "core/errors.h"

namespace spdl_torch::core::augment {
namespace {

// The mix's buffers, checked to be a mix in progress on an image of `n` values.
void check_open(const MixState& mix, size_t n, const char* op) {
  if (!mix.open || mix.sum->size() != n) throw InternalError(std::string("augment: ") + op + " outside a mix");
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

void mix_begin(const RgbImage& img, float w0, MixState& mix) {
  const size_t n = size_t(img.pixels() * 3);
  mix.source->assign(img.data, img.data + n);
  mix.sum->resize(n);
  scale_into(mix.sum->data(), img.data, n, w0);
  mix.open = true;
}

void mix_add(const RgbImage& img, float w, MixState& mix) {
  const size_t n = size_t(img.pixels() * 3);
  check_open(mix, n, "mix_add");
  add_scaled(mix.sum->data(), img.data, n, w);
  std::memcpy(img.data, mix.source->data(), n);
}

void mix_end(const RgbImage& img, float alpha, MixState& mix) {
  const size_t n = size_t(img.pixels() * 3);
  check_open(mix, n, "mix_end");
  if (alpha == 1.0f) {  // Image.blend(source, mixed, 1) is the mixed image
    to_bytes(img.data, mix.sum->data(), n);
  } else {
    blend_into(img.data, mix.source->data(), mix.sum->data(), n, alpha);
  }
  mix.open = false;
}

template <>
void run_op<Code::MixBegin>(const RgbImage& img, const Args& a, ProgramState& state) {
  mix_begin(img, a.real("weight"), state.mix);
}

template <>
void run_op<Code::MixAdd>(const RgbImage& img, const Args& a, ProgramState& state) {
  mix_add(img, a.real("weight"), state.mix);
}

template <>
void run_op<Code::MixEnd>(const RgbImage& img, const Args& a, ProgramState& state) {
  mix_end(img, a.real("alpha"), state.mix);
}

}  // namespace spdl_torch::core::augment
