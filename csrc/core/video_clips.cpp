// SPDX-License-Identifier: BSD-3-Clause
// decode_video_clips (video_clips.h): plan every video's clips (open, index, sample), then decode the
// videos largest first, resampling each wanted frame straight into its slots.
#include "core/video_clips.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>

#include "core/crop_geometry.h"
#include "core/errors.h"
#include "core/seconds_text.h"
#include "core/video_reader.h"

namespace spdl_torch::core {

ClipSampling parse_clip_sampling(const std::string& name) {
  if (name == "regular") return ClipSampling::Regular;
  if (name == "random") return ClipSampling::Random;
  throw InvalidArgument("expected sampling \"regular\" or \"random\", got \"" + name + "\"");
}

void ClipOptions::validate() const {
  if (clip_len < 1) throw InvalidArgument("expected clip_len >= 1, got " + std::to_string(clip_len));
  if (stride < 1) throw InvalidArgument("expected stride >= 1, got " + std::to_string(stride));
  if (clips_per_video < 1) {
    throw InvalidArgument("expected clips_per_video >= 1, got " + std::to_string(clips_per_video));
  }
  if (!(frame_interval >= 0) || !std::isfinite(frame_interval)) {
    throw InvalidArgument("expected frame_interval >= 0 seconds (0: by index), got " + seconds_text(frame_interval));
  }
  if (max_frames > 0 && clip_len * clips_per_video > max_frames) {
    throw InvalidArgument("clips_per_video * clip_len = " + std::to_string(clip_len * clips_per_video) +
                          " frames per video exceeds max_frames = " + std::to_string(max_frames));
  }
  frame.validate();
  read.validate();
}

namespace {

int64_t clip_start(const ClipOptions& opt, int64_t n, int64_t room, SplitMix64& rng) {
  if (room <= 0) return 0;
  if (opt.sampling == ClipSampling::Random) return rng.randint(room + 1);
  if (opt.clips_per_video == 1) return room / 2;
  return round_half_even(double(n) * double(room) / double(opt.clips_per_video - 1));
}

void draw_geometry(const ClipOptions& opt, int64_t h, int64_t w, SplitMix64& rng, ClipPlan& plan) {
  for (int64_t n = 0; n < opt.clips_per_video; ++n) {
    plan.geometry.push_back(sample_geometry(opt.frame, h, w, int64_t(rng.next())));
  }
}

}  // namespace

ClipPlan plan_clips_by_index(const ClipOptions& opt, int64_t num_frames, int64_t height, int64_t width,
                             int64_t seed) {
  ClipPlan plan;
  SplitMix64 rng(seed);
  const int64_t span = (opt.clip_len - 1) * opt.stride + 1;
  const int64_t room = num_frames - span;
  for (int64_t n = 0; n < opt.clips_per_video; ++n) {
    const int64_t start = clip_start(opt, n, room, rng);
    for (int64_t t = 0; t < opt.clip_len; ++t) plan.indices.push_back(std::min(start + t * opt.stride, num_frames - 1));
  }
  draw_geometry(opt, height, width, rng, plan);
  return plan;
}

namespace {

// By time: clip starts t0 in [first, end - (T - 1) * interval] (regular: evenly spaced; random: drawn),
// frame t at the frame displayed at t0 + t * interval (past the end: the last frame).
ClipPlan plan_clips_by_time(const ClipOptions& opt, VideoReader& reader, int64_t height, int64_t width,
                            int64_t seed) {
  ClipPlan plan;
  SplitMix64 rng(seed);
  const int64_t count = reader.num_frames();
  const double first = reader.frame_time(0);
  const double end = reader.end_time();
  const double room = (end - first) - double(opt.clip_len - 1) * opt.frame_interval;
  for (int64_t n = 0; n < opt.clips_per_video; ++n) {
    double t0 = first;
    if (room > 0) {
      if (opt.sampling == ClipSampling::Random) {
        t0 = first + rng.uniform() * room;
      } else {
        t0 = first + (opt.clips_per_video == 1 ? room / 2 : room * double(n) / double(opt.clips_per_video - 1));
      }
    }
    for (int64_t t = 0; t < opt.clip_len; ++t) {
      const double at = t0 + double(t) * opt.frame_interval;
      plan.indices.push_back(at >= end ? count - 1 : reader.index_at(std::max(at, first)));
    }
  }
  draw_geometry(opt, height, width, rng, plan);
  return plan;
}

struct VideoPlan {
  std::unique_ptr<VideoReader> reader;
  ClipPlan clips;
  int64_t height = 0, width = 0;  // displayed frame size from the header
  double cost = 0;
  std::string error;
};

std::string describe(const std::exception& e) { return e.what(); }

void plan_video(const ClipInput& in, const ClipOptions& opt, VideoPlan& p) {
  try {
    p.reader = std::make_unique<VideoReader>(in.source, opt.read);
    const VideoMetadata& m = p.reader->metadata();
    const int64_t rot = opt.read.apply_rotation ? m.rotation : 0;
    const int64_t h = rot % 180 ? m.width : m.height;
    const int64_t w = rot % 180 ? m.height : m.width;
    if (h < 1 || w < 1) throw DecodeError("the video stream has no frame size in its header");
    p.clips = opt.frame_interval > 0 ? plan_clips_by_time(opt, *p.reader, h, w, in.seed)
                                     : plan_clips_by_index(opt, p.reader->num_frames(), h, w, in.seed);
    p.height = h;
    p.width = w;
    p.cost = double(opt.clips_per_video * opt.clip_len) * double(h * w);
  } catch (const DecodeError& e) {
    p.error = describe(e);
  } catch (const IOError& e) {
    p.error = describe(e);
  } catch (const FrameRangeError& e) {
    p.error = describe(e);
  }
  if (!p.error.empty()) p.reader.reset();
}

SlotWriter frame_slot(const ClipSlots& s, int64_t clip, int64_t t, int64_t elem) {
  SlotWriter w = s.frame;
  w.data += (clip * s.stride_clip + t * s.stride_time) * elem;
  return w;
}

int64_t element_size(OutType t) { return t == OutType::UInt8 ? 1 : t == OutType::Float32 ? 4 : 2; }

void zero_video(const ClipSlots& s, const ClipOptions& opt) {
  const int64_t elem = element_size(s.frame.type);
  for (int64_t n = 0; n < opt.clips_per_video; ++n) {
    for (int64_t t = 0; t < opt.clip_len; ++t) frame_slot(s, n, t, elem).zero();
  }
}

// Decodes one video's clips into its slots; returns the frames that could not be produced (lenient mode).
int64_t decode_video(const ClipOptions& opt, VideoPlan& p, const ClipSlots& slots) {
  const int64_t elem = element_size(slots.frame.type);
  int64_t lost = 0;
  std::vector<AxisWeights> wy, wx;  // per clip, for the planned frame size
  for (const SampleGeometry& g : p.clips.geometry) {
    wy.emplace_back(g.y, p.height, opt.frame.height, opt.frame.filter, false);
    wx.emplace_back(g.x, p.width, opt.frame.width, opt.frame.filter, g.flip);
  }
  const FrameSink sink = [&](size_t k, const VideoFrame* f) {
    const int64_t clip = int64_t(k) / opt.clip_len;
    const int64_t t = int64_t(k) % opt.clip_len;
    const SlotWriter out = frame_slot(slots, clip, t, elem);
    if (f == nullptr) {
      out.zero();
      ++lost;
      return;
    }
    if (f->height != p.height || f->width != p.width) {
      throw DecodeError("the frame size changed inside the stream, from " + std::to_string(p.width) + "x" +
                        std::to_string(p.height) + " to " + std::to_string(f->width) + "x" +
                        std::to_string(f->height) + " (frame " + std::to_string(f->index) + ")");
    }
    resample_into(f->rgb, f->height, f->width, f->row_bytes, wy[size_t(clip)], wx[size_t(clip)], out);
  };
  p.reader->decode(p.clips.indices, sink);
  return lost;
}

}  // namespace

std::vector<std::string> decode_video_clips(const std::vector<ClipInput>& inputs, const ClipOptions& opt,
                                            const std::vector<ClipSlots>& slots, ThreadPool& pool,
                                            std::vector<int64_t>& indices_out,
                                            const std::function<void()>& on_last_started) {
  const int64_t n = int64_t(inputs.size());
  if (int64_t(slots.size()) != n) throw InternalError("decode_video_clips: one ClipSlots per input expected");
  const int64_t per_video = opt.clips_per_video * opt.clip_len;
  indices_out.assign(size_t(n * per_video), -1);
  std::vector<VideoPlan> plans(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int64_t i) { plan_video(inputs[size_t(i)], opt, plans[size_t(i)]); });
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return plans[size_t(a)].cost > plans[size_t(b)].cost; });
  pool.parallel_for(
      order,
      [&](int64_t i) {
        VideoPlan& p = plans[size_t(i)];
        if (p.error.empty()) {
          try {
            const int64_t lost = decode_video(opt, p, slots[size_t(i)]);
            if (lost > 0) {
              p.error = std::to_string(lost) + " of " + std::to_string(per_video) +
                        " frames could not be decoded (zero-filled)";
            }
            if (p.error.empty() && p.reader->corrupt_packets() > 0) {
              p.error = std::to_string(p.reader->corrupt_packets()) + " corrupt packets or frames in the stream";
            }
          } catch (const DecodeError& e) {
            p.error = describe(e);
          } catch (const IOError& e) {
            p.error = describe(e);
          } catch (const FrameRangeError& e) {
            throw InternalError(std::string("a planned clip frame is out of range: ") + e.what(), i);
          }
        }
        if (!p.error.empty()) {
          zero_video(slots[size_t(i)], opt);
        } else {
          std::copy(p.clips.indices.begin(), p.clips.indices.end(), indices_out.begin() + i * per_video);
        }
        p.reader.reset();
      },
      on_last_started);
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) errors[size_t(i)] = plans[size_t(i)].error;
  return errors;
}

}  // namespace spdl_torch::core
