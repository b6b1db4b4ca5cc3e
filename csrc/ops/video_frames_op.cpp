// SPDX-License-Identifier: BSD-3-Clause
// decode_video_frames: frames of one video by index or timestamp -> uint8 Tensor[N, 3, H, W] (RGB, rows
// written in place: channels-last strides), their pts (seconds) and a per-frame corrupt mask.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/video_reader.h"
#include "ops/video_common.h"

namespace spdl_torch::ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> decode_video_frames(
    const at::Tensor& data, c10::optional<at::ArrayRef<int64_t>> indices,
    c10::optional<at::ArrayRef<double>> seconds, c10::string_view seek_mode, int64_t stream_index,
    int64_t num_ffmpeg_threads,
    bool strict, bool apply_rotation, bool skip_nonref, int64_t max_pixels, int64_t max_frames,
    int64_t max_output_bytes) {
  constexpr const char* op = "decode_video_frames";
  check_encoded_bytes(data, op);
  TORCH_CHECK_VALUE(indices.has_value() != seconds.has_value(), op, ": expected exactly one of indices and seconds");
  const int64_t n = indices.has_value() ? int64_t(indices->size()) : int64_t(seconds->size());
  TORCH_CHECK_VALUE(max_frames <= 0 || n <= max_frames, op, ": ", n, " frames requested, over max_frames = ",
                    max_frames);
  const at::Tensor bytes = data.contiguous();
  const core::VideoReadOptions opt =
      video_read_options(op, stream_index, num_ffmpeg_threads, seek_mode, strict, apply_rotation, skip_nonref, max_pixels);
  return translate_video_errors(op, [&] {
    core::VideoReader reader(video_source(bytes), opt);
    const core::VideoMetadata& m = reader.metadata();
    std::vector<int64_t> wanted;
    if (indices.has_value()) {
      wanted.assign(indices->begin(), indices->end());
    } else {
      for (double t : *seconds) wanted.push_back(reader.index_at(t));
    }
    const int64_t rot = apply_rotation ? m.rotation : 0;
    const int64_t h = rot % 180 ? m.width : m.height;
    const int64_t w = rot % 180 ? m.height : m.width;
    check_output_bytes(op, {n, h, w, 3}, 1,
                       std::to_string(n) + " frames of 3x" + std::to_string(h) + "x" + std::to_string(w) + " uint8",
                       max_output_bytes);
    if (n > 0) reader.num_frames();  // the range check and index before any frame memory
    for (int64_t i : wanted) reader.frame_time(i);
    at::Tensor nhwc = at::empty({n, h, w, 3}, at::kByte);
    at::Tensor pts = at::empty({n}, at::kDouble);
    at::Tensor corrupt = at::zeros({n}, at::kBool);
    uint8_t* base = nhwc.data_ptr<uint8_t>();
    double* pts_ptr = pts.data_ptr<double>();
    bool* bad = corrupt.data_ptr<bool>();
    reader.decode(wanted, [&](size_t k, const core::VideoFrame* f) {
      uint8_t* out = base + int64_t(k) * h * w * 3;
      if (f == nullptr) {
        std::memset(out, 0, size_t(h * w * 3));
        pts_ptr[k] = reader.frame_time(wanted[k]);
        bad[k] = true;
        return;
      }
      if (f->height != h || f->width != w) {
        throw core::DecodeError("the frame size changed inside the stream, from " + std::to_string(w) + "x" +
                                std::to_string(h) + " to " + std::to_string(f->width) + "x" +
                                std::to_string(f->height) + " (frame " + std::to_string(f->index) + ")");
      }
      for (int64_t r = 0; r < h; ++r) std::memcpy(out + r * w * 3, f->rgb + r * f->row_bytes, size_t(w * 3));
      pts_ptr[k] = f->pts;
      bad[k] = f->corrupt;
    });
    return std::make_tuple(nhwc.permute({0, 3, 1, 2}), pts, corrupt);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_video_frames", &decode_video_frames); }

}  // namespace spdl_torch::ops
