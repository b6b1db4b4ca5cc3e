// video_metadata: a video stream's header (no frame decoded) as (ints, floats, key-frame times, strings). ints:
// stream_index, width, height, rotation, time base (num, den), num_frames_from_header, num_frames_from_content
// (-1: not known), bit_rate; floats: begin_stream_seconds, duration_seconds, average_fps.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <tuple>

#include "core/video_reader.h"
#include "ops/video_common.h"

namespace spdl_torch::ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor, std::string, std::string, std::string> video_metadata(
    const at::Tensor& data, int64_t stream_index, bool count_frames) {
  check_encoded_bytes(data, "video_metadata");
  const at::Tensor bytes = data.contiguous();
  const core::VideoReadOptions opt =
      video_read_options("video_metadata", stream_index, 1, "exact", true, true, false, 0);
  return translate_video_errors("video_metadata", [&] {
    core::VideoReader reader(video_source(bytes), opt);
    const core::VideoMetadata m = reader.metadata();
    // metadata() counts the packets when the header states no count
    const int64_t from_header = m.num_frames_counted ? -1 : m.num_frames;
    const int64_t from_content = count_frames ? reader.num_frames() : m.num_frames_counted ? m.num_frames : -1;
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
    at::Tensor floats = at::empty({3}, at::kDouble);
    double* f = floats.data_ptr<double>();
    f[0] = m.start_time;
    f[1] = m.duration;
    f[2] = m.average_fps;
    at::Tensor keys = at::empty({int64_t(m.key_frame_times.size())}, at::kDouble);
    std::copy(m.key_frame_times.begin(), m.key_frame_times.end(), keys.data_ptr<double>());
    return std::make_tuple(ints, floats, keys, m.container, m.codec, m.pixel_format);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("video_metadata", &video_metadata); }

}  // namespace spdl_torch::ops
