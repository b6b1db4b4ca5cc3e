// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: core::decode_batch (the fused batch path) on one sample, differential: the partial
// JPEG decode (only the crop's rows and columns) against the whole-image decode, for eval, train (crop
// position and flip from the input's hash), resize, random_crop (padding, both flips, grey) and nearest
// geometry. Where the whole-image decode succeeds, the
// partial one must succeed with identical bytes (it reads a prefix of the same data); a failure must be
// a reason string and a zero-filled slot. Each config also runs with an augmentation program and erase
// rows drawn from the input's hash (every op code, AugMix's mix rows, arguments at their range limits;
// augment/ops.h), which must be the same in both modes and leave a failed slot zero-filled too.
// Built by `make fuzz`; not part of the extension (.cc suffix).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/augment/ops.h"
#include "core/batch_decoder.h"
#include "core/thread_pool.h"

using namespace spdl_torch::core;

namespace {

constexpr int64_t kMaxPixels = int64_t(1) << 22;  // 4 Mpx: one decode stays far below the rss limit

std::vector<uint8_t> run(const SampleInput& in, BatchOptions opt, bool partial, std::string& error) {
  static ThreadPool pool(1);
  opt.partial_decode = partial;
  std::vector<uint8_t> out(size_t(opt.height * opt.width * opt.num_output_channels), 0xAB);
  SlotWriter w;
  w.data = out.data();
  w.type = OutType::UInt8;
  w.stride_c = opt.height * opt.width;
  w.stride_h = opt.width;
  w.stride_w = 1;
  w.height = opt.height;
  w.width = opt.width;
  w.channels = opt.num_output_channels;
  w.gray = opt.gray;
  error = decode_batch({in}, opt, {w}, pool)[0];
  if (!error.empty()) {
    for (uint8_t b : out) {
      if (b != 0) abort();  // a failed slot must be zero-filled
    }
  }
  return out;
}

constexpr int kSteps = 8;  // program rows

// A program of kSteps rows and two erase rows from the hash: op rows of every code but the mix rows, arguments spread
// over (and onto the edges of) their valid ranges (pil_affine matrices from the identity to far outside the image: each
// of Pillow's nearest engines, the fill; each filter), either three of them or a mix of two chains (mix_begin, one op,
// mix_add, two ops, mix_add, mix_end with alpha 1 or below), padded with code 0. validate_program / validate_erase
// accept every program made here.
void make_program(uint64_t h, float* rows, float* erase_row) {
  auto next = [&h] {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h;
  };
  auto unit = [&] { return float(next() % 1001) / 1000.0f; };  // 0, 0.001, ..., 1
  // Any argument from its range in the op table (a choice's index, an integer, a number with its open ends
  // avoided; unbounded ends as +-4): the ops without a case of their own below.
  auto from_table = [&](float* r) {
    float* column = r + 1;
    const augment::OpSpec& op = augment::kOps[int(r[0])];
    for (int k = 0; k < op.num_args; ++k) {
      const augment::Arg& a = op.args[k];
      const double lo = std::isinf(a.low) ? -4 : a.low, hi = std::isinf(a.high) ? lo + 8 : a.high;
      for (int c = 0; c < a.count; ++c, ++column) {
        if (a.kind != augment::ArgKind::Real) {
          int64_t v = int64_t(lo) + int64_t(next() % uint64_t(std::min(hi - lo, 255.0) + 1));
          if (a.odd && v % 2 == 0) v = v + 1 <= int64_t(hi) ? v + 1 : v - 1;
          *column = float(v);
        } else {
          const double v = lo + double(unit()) * (hi - lo);
          *column = float((a.low_open && v <= lo) || (a.high_open && v >= hi) ? (lo + hi) / 2 : v);
        }
      }
    }
  };
  auto op_row = [&](float* r) {
    // any op but the mix rows (placed below)
    uint64_t code = 1 + next() % uint64_t(augment::kMaxCode - 3);
    if (code >= uint64_t(augment::Code::MixBegin)) code += 3;
    r[0] = float(code);
    static_assert(int(augment::Code::MixEnd) == int(augment::Code::MixBegin) + 2, "the mix codes are consecutive");
    switch (augment::Code(int(r[0]))) {
      case augment::Code::Affine:
        r[1] = unit() * 720 - 360;
        r[2] = unit() * 80 - 40;
        r[3] = unit() * 80 - 40;
        r[4] = unit() * 178 - 89;
        r[5] = unit() * 178 - 89;
        r[6] = float(next() % 2);
        r[7] = next() % 4 == 0 ? augment::kNoFill : unit() * 255;
        break;
      case augment::Code::AdjustHue: r[1] = unit() - 0.5f; break;
      case augment::Code::Posterize: r[1] = float(next() % 9); break;
      case augment::Code::Solarize: r[1] = unit() * 300 - 45; break;
      case augment::Code::GaussianBlur:
        r[1] = float(2 * (next() % 12) + 1);
        r[2] = float(2 * (next() % 12) + 1);
        r[3] = unit() * 5 + 0.01f;
        r[4] = unit() * 5 + 0.01f;
        break;
      case augment::Code::Fill:
        for (int c = 1; c <= 3; ++c) r[c] = float(next() % 256);
        break;
      case augment::Code::PilAffine: {
        const float scale = next() % 8 == 0 ? 1e5f : 1.0f;  // sometimes far outside: the fixed-point limit, the fill
        const uint64_t kind = next() % 4;                   // identity, scale only (b = d = 0), shear, any
        r[1] = r[5] = 1;
        if (kind >= 1) r[1] = (unit() * 4 - 2) * scale, r[5] = (unit() * 4 - 2) * scale;
        if (kind >= 2) r[2] = (unit() - 0.5f) * scale;
        if (kind == 3) r[4] = (unit() - 0.5f) * scale;
        if (kind >= 1) r[3] = (unit() * 80 - 40) * scale, r[6] = (unit() * 80 - 40) * scale;
        r[7] = float(next() % 3);
        break;
      }
      case augment::Code::SolarizeAdd:
        r[1] = float(next() % 256);
        r[2] = unit() * 256;
        break;
      case augment::Code::PilAffineLow:  // the parts of a double matrix: tiny, or large enough to move samples
        for (int c = 1; c <= 6; ++c) r[c] = (unit() - 0.5f) * (next() % 2 ? 1e-6f : 8.0f);
        break;
      case augment::Code::PilEnhance:
        r[1] = float(next() % 4);
        r[2] = unit() * 8;
        break;
      case augment::Code::PilHue: r[1] = float(next() % 256); break;
      case augment::Code::PilAutocontrast: break;
      default: from_table(r); break;
    }
  };
  for (int c = 0; c < kSteps * augment::kColumns; ++c) rows[c] = 0;
  auto at = [&](int k) { return rows + k * augment::kColumns; };
  if (next() % 2 == 0) {
    for (int k = 0; k < 3; ++k) op_row(at(k));
  } else {  // weights up to 1.5 each: sums past 255 reach the clamp
    at(0)[0] = float(augment::Code::MixBegin), at(0)[1] = unit() * 1.5f;
    op_row(at(1));
    at(2)[0] = float(augment::Code::MixAdd), at(2)[1] = unit() * 1.5f;
    op_row(at(3));
    op_row(at(4));
    at(5)[0] = float(augment::Code::MixAdd), at(5)[1] = unit() * 1.5f;
    at(6)[0] = float(augment::Code::MixEnd), at(6)[1] = next() % 2 ? 1.0f : unit();  // alpha 1: the mix itself
  }
  augment::validate_program(rows, kSteps, [](int64_t) { return std::string("fuzz"); });
  for (int b = 0; b < 2; ++b) {  // two boxes, written in order
    float* e = erase_row + b * augment::kEraseColumns;
    e[0] = float(next() % 3);
    for (int c = 1; c <= 4; ++c) e[c] = float(next() % 40);
    for (int c = 5; c < 8; ++c) e[c] = unit() * 600 - 300;
    augment::validate_erase(e, "fuzz");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a: the sample's seed
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  SampleInput in{data, size, int64_t(hash)};
  BatchOptions configs[5];
  configs[0].geometry = GeometryMode::Eval;
  configs[0].resize_shorter = 40;
  configs[0].height = 24;
  configs[0].width = 32;
  configs[1].geometry = GeometryMode::Train;
  configs[1].height = 16;
  configs[1].width = 12;
  configs[1].hflip_prob = 0.5;
  configs[1].dct_min_ratio = 1.0;
  configs[1].filter = ResampleFilter::Bicubic;
  configs[2].geometry = GeometryMode::Resize;
  configs[2].height = 9;
  configs[2].width = 30;
  configs[3].geometry = GeometryMode::RandomCrop;  // RandomCrop with padding, flips, grey
  configs[3].resize_shorter = 20;
  configs[3].max_size = 28;
  configs[3].padding = {2, 0, 1, 3};
  configs[3].pad_if_needed = true;
  configs[3].height = 26;
  configs[3].width = 18;
  configs[3].hflip_prob = configs[3].vflip_prob = 0.5;
  configs[3].gray = GrayRule::Torchvision;
  configs[4].geometry = GeometryMode::Train;
  configs[4].height = 11;
  configs[4].width = 13;
  configs[4].filter = ResampleFilter::NearestExact;
  configs[4].gray = GrayRule::Pillow;
  configs[4].num_output_channels = 1;
  float program[kSteps * augment::kColumns], erase_row[2 * augment::kEraseColumns];
  make_program(hash, program, erase_row);
  for (BatchOptions& opt : configs) {
    opt.max_pixels = kMaxPixels;
    opt.validate();  // the checks the ops make
    for (bool augmented : {false, true}) {
      SampleInput sample = in;
      if (augmented) {
        sample.augment = program, sample.augment_steps = kSteps;
        sample.erase = erase_row, sample.erase_boxes = 2;
      }
      std::string full_error, partial_error;
      const std::vector<uint8_t> full = run(sample, opt, false, full_error);
      const std::vector<uint8_t> partial = run(sample, opt, true, partial_error);
      if (full_error.empty() && (!partial_error.empty() || partial != full)) abort();
    }
  }
  return 0;
}
