// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: arbitrary bytes through the video demuxer + decoder (VideoReader over the bytes in
// memory): metadata, the exact index, frames by index forwards and backwards, the timestamp spans (the exact
// one's start is frame 0), lenient and strict. Only
// DecodeError / FrameRangeError may come out; never a crash, a sanitizer report, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "core/video_reader.h"

using namespace spdl_torch::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool strict : {false, true}) {
    try {
      VideoReadOptions opt;
      opt.strict = strict;
      opt.max_pixels = 1 << 20;  // small frames only: a fuzzed header must not allocate gigabytes
      VideoReader reader(MediaSource::from_memory(data, size), opt);
      reader.metadata();
      const int64_t n = reader.num_frames();
      if (n <= 0) continue;
      std::vector<int64_t> wanted = {n - 1, 0, n / 2, n / 2};
      if (n > 64) wanted = {0, n / 2};
      int64_t sum = 0;
      reader.decode(wanted, [&](size_t, const VideoFrame* f) {
        if (f != nullptr) sum += f->rgb[0] + f->rgb[(f->height - 1) * f->row_bytes + (f->width - 1) * 3 + 2];
      });
      reader.index_at(reader.frame_time(0));
      // The span the metadata reports is the one timestamps are checked against: its first instant is frame 0.
      if (const std::optional<SecondsSpan> span = reader.seconds_span(SeekMode::Exact)) {
        if (reader.index_at(span->begin) != 0) __builtin_trap();
      }
      reader.seconds_span(SeekMode::Approximate);
      (void)sum;
    } catch (const DecodeError&) {
    } catch (const FrameRangeError&) {
    }
  }
  return 0;
}
