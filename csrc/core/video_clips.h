// SPDX-License-Identifier: BSD-3-Clause
// Training clips: N clips of T frames per video at a stride (by frame index) or at a frame interval (by
// time), at regular or seeded random positions, each clip with one geometry (crop box, flip) for all its
// frames, written straight into its slots of a caller-provided batch over the shared thread pool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/batch_decoder.h"
#include "core/batch_options.h"
#include "core/media_source.h"
#include "core/resample.h"
#include "core/thread_pool.h"
#include "core/video_types.h"

namespace spdl_torch::core {

enum class ClipSampling { Regular, Random };  // evenly spaced starts / starts drawn from the video's seed
ClipSampling parse_clip_sampling(const std::string& name);  // "regular", "random" (torchcodec's samplers)

struct ClipOptions {
  int64_t clip_len = 16;          // T >= 1 frames per clip
  int64_t stride = 1;             // by index: frames i, i + stride, ... (>= 1)
  double frame_interval = 0;      // > 0: by time: frames displayed at t, t + interval, ... (seconds)
  int64_t clips_per_video = 1;    // N >= 1
  ClipSampling sampling = ClipSampling::Regular;
  int64_t max_frames = kDefaultMaxVideoFrames;  // N * T per video above this is refused (<= 0: no limit)
  BatchOptions frame;             // per-clip geometry, output size, dtype, normalization (as decode_images)
  VideoReadOptions read;

  void validate() const;  // InvalidArgument for the first option out of range (frame.validate() included)
  bool random() const { return sampling == ClipSampling::Random || frame.random(); }
};

struct ClipInput {
  MediaSource source;
  int64_t seed = 0;
};

// Where video b's clips go: frame (clip n, time t) is the SlotWriter `frame` moved by n * stride_clip +
// t * stride_time elements.
struct ClipSlots {
  SlotWriter frame;
  int64_t stride_clip = 0;
  int64_t stride_time = 0;
};

// One video's clip plan: the frame index of every (clip, time) and each clip's geometry, for a video of
// num_frames frames whose displayed frames are height x width. By index the clips start at
// regular: round(n * (F - span) / (N - 1)) (N == 1: (F - span) / 2), random: randint(F - span + 1) draws
// from SplitMix64(seed), span = (T - 1) * stride + 1; indices past the end repeat the last frame (videos
// shorter than a clip). Then one draw per clip seeds its geometry (sample_geometry).
struct ClipPlan {
  std::vector<int64_t> indices;  // N * T
  std::vector<SampleGeometry> geometry;  // N
};
ClipPlan plan_clips_by_index(const ClipOptions& opt, int64_t num_frames, int64_t height, int64_t width,
                             int64_t seed);

// Decodes every video's clips into its slots. Returns one message per video: empty when it succeeded; else
// the reason (its slots zero-filled; in lenient mode a frame the decoder could not produce is zero-filled
// and reported here too, as "N frames could not be decoded"). `indices_out` (N * T per video) receives
// the frame indices (-1 for a failed video). Videos run largest predicted cost first (frames x pixels).
// FrameRangeError is never raised: clips always fit. on_last_started as decode_batch's.
std::vector<std::string> decode_video_clips(const std::vector<ClipInput>& inputs, const ClipOptions& opt,
                                            const std::vector<ClipSlots>& slots, ThreadPool& pool,
                                            std::vector<int64_t>& indices_out,
                                            const std::function<void()>& on_last_started = nullptr);

}  // namespace spdl_torch::core
