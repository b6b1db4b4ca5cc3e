// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: core::decode_image over every colour mode, with and without EXIF orientation, under a
// bounded pixel limit. Built by `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); not part of the
// extension (setup.py compiles csrc/**/*.cpp only, hence the .cc suffix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/errors.h"
#include "core/image_decoder.h"

using namespace spdl_torch::core;

namespace {
// 4 Mpx keeps one decode under ~64 MB (16-bit RGBA), far below libFuzzer's default 2 GB rss limit.
constexpr int64_t kMaxPixels = int64_t(1) << 22;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ColorMode modes[] = {ColorMode::RGB, ColorMode::RGBA, ColorMode::GRAY, ColorMode::GRAY_ALPHA,
                                    ColorMode::UNCHANGED};
  for (ColorMode mode : modes) {
    for (bool orient : {true, false}) {
      if (!orient && mode != ColorMode::RGB) continue;  // orientation only changes the copy: once is enough
      DecodeOptions opt;
      opt.mode = mode;
      opt.apply_exif_orientation = orient;
      opt.max_pixels = kMaxPixels;
      // The depth conversions: 16 bit where the op asks for uint16 (RGBA, UNCHANGED), the source's elsewhere.
      const bool sixteen = mode == ColorMode::RGBA || (mode == ColorMode::UNCHANGED && orient);
      opt.depth = sixteen ? BitDepth::Sixteen : BitDepth::Source;
      std::vector<uint8_t> out;
      ImageShape got;
      int calls = 0;
      try {
        decode_image(data, size, opt, [&](const ImageShape& s) {
          ++calls;
          if (s.height <= 0 || s.width <= 0 || s.channels < 1 || s.channels > 4) abort();
          if (int64_t(s.height) * s.width > kMaxPixels) abort();  // the limit must hold before allocation
          if (sixteen ? s.type != ElemType::UInt16 : (mode != ColorMode::UNCHANGED && s.type != ElemType::UInt8)) abort();
          got = s;
          out.assign(size_t(s.num_bytes()), 0);
          return out.data();
        });
        if (calls != 1) abort();  // success must have produced exactly one output
        const int want = mode == ColorMode::RGB    ? 3
                         : mode == ColorMode::RGBA ? 4
                         : mode == ColorMode::GRAY ? 1
                         : mode == ColorMode::GRAY_ALPHA ? 2
                                                   : 0;
        if (want && got.channels != want) abort();
        // Touch every output byte so ASan/MSan-style tools see reads of what the decoder wrote.
        volatile uint8_t sink = 0;
        for (uint8_t b : out) sink ^= b;
      } catch (const DecodeError&) {
        if (calls > 1) abort();
      }
    }
  }
  return 0;
}
