// libFuzzer target: core::decode_batch (the fused batch path) on one sample, differential: the partial
// JPEG decode (only the crop's rows and columns) against the whole-image decode, for eval, train (crop
// position and flip from the input's hash), resize, random_crop (padding, both flips, grey) and nearest
// geometry. Where the whole-image decode succeeds, the
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
