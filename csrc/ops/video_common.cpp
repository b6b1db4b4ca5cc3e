// SPDX-License-Identifier: BSD-3-Clause
#include "ops/video_common.h"

#include <climits>
#include <cstdint>
#include <cstdio>

namespace spdl_torch::ops {

core::VideoReadOptions video_read_options(const char* op, int64_t stream_index, int64_t num_ffmpeg_threads, c10::string_view seek_mode,
                                          bool strict, bool apply_rotation, bool skip_nonref, int64_t max_pixels) {
  // Out of int's range: refused here, never wrapped into another value by the narrowing below.
  TORCH_CHECK_VALUE(stream_index >= -1 && stream_index <= INT_MAX, op,
                    ": expected stream_index >= 0, or -1 for FFmpeg's best video stream, got ", stream_index);
  TORCH_CHECK_VALUE(num_ffmpeg_threads >= 0 && num_ffmpeg_threads <= INT_MAX, op,
                    ": expected num_ffmpeg_threads >= 0 (0: FFmpeg picks), got ", num_ffmpeg_threads);
  return translate_core_errors(op, [&] {
    core::VideoReadOptions o;
    o.stream = int(stream_index);
    o.threads = int(num_ffmpeg_threads);
    o.seek_mode = core::parse_seek_mode(std::string(seek_mode));
    o.strict = strict;
    o.apply_rotation = apply_rotation;
    o.skip_nonref = skip_nonref;
    o.max_pixels = max_pixels;
    o.validate();
    return o;
  });
}

void check_output_bytes(const char* op, at::IntArrayRef sizes, int64_t element_size, const std::string& what,
                        int64_t max_output_bytes) {
  if (max_output_bytes <= 0) return;
  for (int64_t s : sizes) {
    if (s <= 0) return;  // an empty output
  }
  // Each factor is below 2^63: stopped once past 2^64, the product stays below 2^127 (exact in 128 bits).
  unsigned __int128 bytes = uint64_t(element_size);
  for (int64_t s : sizes) {
    if (bytes > (unsigned __int128)(UINT64_MAX)) break;
    bytes *= uint64_t(s);
  }
  if (bytes <= uint64_t(max_output_bytes)) return;
  const bool exact = bytes <= (unsigned __int128)(UINT64_MAX);
  char gib[64];
  std::snprintf(gib, sizeof(gib), "%.1f GiB", double(bytes) / double(int64_t(1) << 30));
  TORCH_CHECK_VALUE(false, op, ": the output, ", what, ", is ",
                    exact ? std::to_string(uint64_t(bytes)) + " bytes (" + gib + ")" : std::string("over 2^64 bytes"),
                    ", over max_output_bytes = ", max_output_bytes,
                    " (raise it per call, or spdl_torch.io.limits.video_output_bytes; <= 0: no limit)");
}

core::MediaSource video_source(const at::Tensor& data) {
  // An empty tensor may have no storage: point at a byte of ours, so the source stays "in memory" (the
  // demuxer then reports "empty input" instead of trying to open a path "").
  static const uint8_t kEmpty = 0;
  if (data.numel() == 0) return core::MediaSource::from_memory(&kEmpty, 0);
  return core::MediaSource::from_memory(data.data_ptr<uint8_t>(), size_t(data.numel()));
}

}  // namespace spdl_torch::ops
