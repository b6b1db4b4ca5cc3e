// SPDX-License-Identifier: BSD-3-Clause
// decode_video_clips: B videos -> Tensor[B, N, T, 3, H, W] (dimension_order "NTCHW") or [B, N, 3, T, H, W] ("NCTHW")
// of N clips of T frames each, decoded, resized/cropped per clip and converted straight into their slots
// on the shared native pool; plus ok (bool[B]) and the frame indices (int64[B, N, T]).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/batch_turn.h"
#include "core/thread_pool.h"
#include "core/video_clips.h"
#include "ops/batch_arguments.h"
#include "ops/batch_memory.h"
#include "ops/video_common.h"

namespace spdl_torch::ops {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> decode_video_clips(
    at::TensorList data, int64_t num_frames_per_clip, int64_t num_clips, int64_t num_indices_between_frames,
    double seconds_between_frames,
    c10::string_view sampling, int64_t height, int64_t width, c10::string_view geometry, int64_t resize_shorter,
    at::ArrayRef<double> scale, at::ArrayRef<double> ratio, double hflip_prob, const c10::optional<at::Tensor>& seeds,
    c10::string_view interpolation, c10::optional<at::ScalarType> dtype, c10::optional<at::ArrayRef<double>> mean,
    c10::optional<at::ArrayRef<double>> std, c10::string_view dimension_order, bool pin_memory, bool strict,
    c10::string_view seek_mode, int64_t num_ffmpeg_threads, bool apply_rotation, bool skip_nonref, int64_t max_pixels,
    int64_t max_frames, int64_t max_output_bytes) {
  constexpr const char* op = "decode_video_clips";
  const int64_t b = int64_t(data.size());
  const at::ScalarType out_dtype = dtype.value_or(at::kByte);
  TORCH_CHECK_VALUE(dimension_order == "NTCHW" || dimension_order == "NCTHW", op,
                    ": expected dimension_order \"NTCHW\" or \"NCTHW\", got \"", std::string(dimension_order), "\"");
  const bool time_major = dimension_order == "NTCHW";
  core::ClipOptions opt;
  opt.read = video_read_options(op, -1, num_ffmpeg_threads, seek_mode, strict, apply_rotation, skip_nonref, max_pixels);
  translate_core_errors(op, [&] {
    opt.clip_len = num_frames_per_clip;
    opt.clips_per_video = num_clips;
    opt.stride = num_indices_between_frames;
    opt.frame_interval = seconds_between_frames;
    opt.sampling = core::parse_clip_sampling(std::string(sampling));
    opt.max_frames = max_frames;
    core::BatchOptions& o = opt.frame;
    fill_batch_geometry(o, geometry, height, width, resize_shorter, scale, ratio, hflip_prob, interpolation,
                        out_dtype, mean, std, "decode_video_clips");
    o.max_pixels = max_pixels;
    opt.validate();
    return 0;
  });
  const int64_t n = num_clips, t = num_frames_per_clip;
  check_output_bytes(op, {b, n, t, 3, height, width}, int64_t(c10::elementSize(out_dtype)),
                     std::to_string(b) + " videos x " + std::to_string(n) + " clips x " + std::to_string(t) +
                         " frames of 3x" + std::to_string(height) + "x" + std::to_string(width) + " " +
                         (out_dtype == at::kByte ? "uint8" : out_dtype == at::kFloat ? "float32" : "bfloat16"),
                     max_output_bytes);
  for (int64_t i = 0; i < b; ++i) {
    const std::string what = std::string(op) + " (sample " + std::to_string(i) + ")";
    check_encoded_bytes(data[size_t(i)], what.c_str());
  }
  at::Tensor seeds_cpu;
  if (seeds.has_value()) {
    TORCH_CHECK_VALUE(seeds->scalar_type() == at::kLong && seeds->dim() == 1 && seeds->numel() == b, op,
                      ": expected seeds as an int64 tensor of shape [", b, "], got ", seeds->scalar_type(),
                      " of shape ", seeds->sizes());
    seeds_cpu = seeds->to(at::kCPU).contiguous();
  } else {
    TORCH_CHECK_VALUE(!opt.random(), op, ": expected seeds (int64[", b,
                      "]) for sampling=\"random\", geometry=\"train\" or hflip_prob > 0, got None");
  }
  TORCH_CHECK(!pin_memory || at::globalContext().hasCUDA(), op,
              ": pin_memory=True needs a CUDA runtime, none is available");
  std::vector<core::ClipInput> inputs(static_cast<size_t>(b));
  std::vector<at::Tensor> keep(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) {
    keep[size_t(i)] = data[size_t(i)].contiguous();
    inputs[size_t(i)].source = video_source(keep[size_t(i)]);
    inputs[size_t(i)].seed = seeds_cpu.defined() ? seeds_cpu.data_ptr<int64_t>()[i] : 0;
  }
  const std::shared_ptr<core::ThreadPool> pool = translate_core_errors(op, [] { return core::global_thread_pool(); });
  core::BatchTurn turn = core::wait_for_batch_turn(*pool);

  const std::vector<int64_t> sizes = time_major ? std::vector<int64_t>{b, n, t, 3, height, width}
                                                : std::vector<int64_t>{b, n, 3, t, height, width};
  at::Tensor batch = pin_memory ? at::empty(sizes, at::TensorOptions().dtype(out_dtype).pinned_memory(true))
                                : empty_batch(sizes, out_dtype, at::MemoryFormat::Contiguous);
  at::Tensor ok = at::empty({b}, at::TensorOptions().dtype(at::kBool));
  const int64_t elem = batch.element_size();
  std::vector<core::ClipSlots> slots(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) {
    core::ClipSlots& s = slots[size_t(i)];
    core::SlotWriter& w = s.frame;
    w.data = static_cast<uint8_t*>(batch.data_ptr()) + i * batch.stride(0) * elem;
    w.type = opt.frame.out_type;
    w.stride_c = batch.stride(time_major ? 3 : 2);
    w.stride_h = batch.stride(4);
    w.stride_w = batch.stride(5);
    w.height = height;
    w.width = width;
    w.channels = 3;
    w.normalize = opt.frame.normalize();
    for (int c = 0; c < 3; ++c) {
      w.mean[c] = opt.frame.channel_mean(c);
      w.std[c] = opt.frame.channel_std(c);
    }
    s.stride_clip = batch.stride(1);
    s.stride_time = batch.stride(time_major ? 2 : 3);
  }
  std::vector<int64_t> indices;
  const std::vector<std::string> errors = translate_video_errors(op, [&] {
    return core::decode_video_clips(inputs, opt, slots, *pool, indices, [&turn] { turn.release(); });
  });
  at::Tensor index_tensor = at::empty({b, n, t}, at::kLong);
  std::copy(indices.begin(), indices.end(), index_tensor.data_ptr<int64_t>());
  bool* ok_ptr = ok.data_ptr<bool>();
  for (int64_t i = 0; i < b; ++i) {
    ok_ptr[i] = errors[size_t(i)].empty();
    if (strict && !ok_ptr[i]) throw_tagged("DecodeError", {{"sample", i}}, errors[size_t(i)]);
  }
  return {batch, ok, index_tensor};
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_video_clips", &decode_video_clips); }

}  // namespace spdl_torch::ops
