// SPDX-License-Identifier: BSD-3-Clause
// video_metadata: a video stream's header (no frame decoded) and the span its frames are displayed in (exact:
// from the frame index) as (ints, floats, key-frame times (exact: the key frames' pts), strings). ints:
// stream_index, width, height, rotation, time base (num, den), num_frames_from_header, num_frames_from_content
// (-1: not known), bit_rate; floats: the header's start, duration_seconds, average_fps, begin / end_stream_seconds.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/video_reader.h"
#include "ops/video_common.h"

namespace spdl_torch::ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor, std::string, std::string, std::string> video_metadata(
    const at::Tensor& data, int64_t stream_index, bool count_frames, c10::string_view seek_mode) {
  check_encoded_bytes(data, "video_metadata");
  const at::Tensor bytes = data.contiguous();
  // The reader seeks exactly (count_frames counts from its index); the span is the one of `seek_mode`.
  const core::SeekMode mode =
      video_read_options("video_metadata", stream_index, 1, seek_mode, true, true, false, 0).seek_mode;
  const core::VideoReadOptions opt =
      video_read_options("video_metadata", stream_index, 1, "exact", true, true, false, 0);
  return translate_video_errors("video_metadata", [&] {
    core::VideoReader reader(video_source(bytes), opt);
    const core::VideoMetadata m = reader.metadata();
    // metadata() counts the packets when the header states no count
    const int64_t from_header = m.num_frames_counted ? -1 : m.num_frames;
    const int64_t from_content = count_frames ? reader.num_frames() : m.num_frames_counted ? m.num_frames : -1;
    // The span decode_video_frames(seconds=) accepts in this seek mode; NaN where no timestamp names a
    // frame (exact: timestamps that do not increase, or no index: decoding raises the reason) or where the
    // header does not tell (approximate: no count, duration or rate; the start is still the header's).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    core::SecondsSpan span{nan, nan};
    try {
      if (const std::optional<core::SecondsSpan> s = reader.seconds_span(mode)) span = *s;
    } catch (const core::DecodeError&) {
      if (mode == core::SeekMode::Approximate) span.begin = m.start_time;
    }
    at::Tensor ints = at::empty({9}, at::kLong);
    int64_t* i = ints.data_ptr<int64_t>();
    i[0] = m.stream_index;
    i[1] = m.width;
    i[2] = m.height;
    i[3] = m.rotation;
    i[4] = m.time_base_num;
    i[5] = m.time_base_den;
    i[6] = from_header;
    i[7] = from_content;
    i[8] = m.bit_rate;
    at::Tensor floats = at::empty({5}, at::kDouble);
    double* f = floats.data_ptr<double>();
    f[0] = m.start_time;
    f[1] = m.duration;
    f[2] = m.average_fps;
    f[3] = span.begin;
    f[4] = span.end;
    std::vector<double> key_times = m.key_frame_times;  // no index (the stream has no frames): the header's
    try {
      key_times = reader.key_frame_times(mode);
    } catch (const core::DecodeError&) {
    }
    at::Tensor keys = at::empty({int64_t(key_times.size())}, at::kDouble);
    std::copy(key_times.begin(), key_times.end(), keys.data_ptr<double>());
    return std::make_tuple(ints, floats, keys, m.container, m.codec, m.pixel_format);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("video_metadata", &video_metadata); }

}  // namespace spdl_torch::ops
