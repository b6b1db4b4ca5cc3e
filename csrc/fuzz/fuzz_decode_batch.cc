// libFuzzer target: core::decode_batch (the fused batch path) on one sample, differential: the partial
// JPEG decode (only the crop's rows and columns) against the whole-image decode, for eval, train (crop
// position and flip from the input's hash) and resize geometry. Where the whole-image decode succeeds, the
// partial one must succeed with identical bytes (it reads a prefix of the same data); a failure must be
// a reason string and a zero-filled slot. Built by `make fuzz`; not part of the extension (.cc suffix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../core/batch_decoder.h"
#include "../core/thread_pool.h"

using namespace spdl_torch::core;

namespace {

constexpr int64_t kMaxPixels = int64_t(1) << 22;  // 4 Mpx: one decode stays far below the rss limit

std::vector<uint8_t> run(const SampleInput& in, BatchOptions opt, bool partial, std::string& error) {
  static ThreadPool pool(1);
  opt.partial_decode = partial;
  std::vector<uint8_t> out(size_t(opt.height * opt.width * 3), 0xAB);
  SlotWriter w;
  w.data = out.data();
  w.type = OutType::UInt8;
  w.stride_c = opt.height * opt.width;
  w.stride_h = opt.width;
  w.stride_w = 1;
  w.height = opt.height;
  w.width = opt.width;
  error = decode_batch({in}, opt, {w}, pool)[0];
  if (!error.empty()) {
    for (uint8_t b : out) {
      if (b != 0) abort();  // a failed slot must be zero-filled
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a: the sample's seed
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  SampleInput in{data, size, int64_t(hash)};
  BatchOptions configs[3];
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
  for (BatchOptions& opt : configs) {
    opt.max_pixels = kMaxPixels;
    opt.validate();  // the checks the ops make
    std::string full_error, partial_error;
    const std::vector<uint8_t> full = run(in, opt, false, full_error);
    const std::vector<uint8_t> partial = run(in, opt, true, partial_error);
    if (full_error.empty() && (!partial_error.empty() || partial != full)) abort();
  }
  return 0;
}
