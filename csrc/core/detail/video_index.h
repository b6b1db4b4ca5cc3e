// The exact frame index of a video stream: every packet's presentation timestamp, read once (no
// decoding), sorted into presentation order, and the key frames to seek to. Internal header.
#pragma once

#include <cstdint>
#include <vector>

#include "demux.h"

namespace spdl_torch::core::detail {

struct FrameIndex {
  std::vector<int64_t> pts;       // frame i's pts (stream time base), ascending: presentation order
  std::vector<int64_t> key_pts;   // the key frames' pts, ascending
  std::vector<int64_t> key_seek;  // where to seek for key k (its pts; decoded index: its packet's dts)
  int64_t end_pts = 0;            // the last frame's pts plus its duration (at least pts + 1)
  bool decoded = false;           // built by decoding (packets without pts), see scan_decoded_frames

  int64_t size() const { return int64_t(pts.size()); }
  // The key frame to decode frame i from: the last key frame whose pts <= pts[i] (frames displayed before
  // an open GOP's key frame depend on the GOP before it), or -1 when none precedes it (decode from the start).
  int64_t key_of(int64_t i) const;
  // key_of for a pts (the last key frame at or before it), -1 when none.
  int64_t key_at(int64_t pts_value) const;
};

// A decoded frame's timestamp: pts, else best_effort_timestamp, else (the last frame drained from a
// decoder fed decode times only) `previous_end`, the end of the frame before it (AV_NOPTS_VALUE: unknown).
int64_t frame_timestamp(const AVFrame* frame, int64_t previous_end);
// The frame's duration in its stream's time base (>= 1).
int64_t frame_duration(const AVFrame* frame);

// Reads every packet of stream `index` from the demuxer's current position (call on a fresh Demuxer).
// Packets without pts and dts are not frames of the index.
// Returns an empty index (pts.empty(), missing_pts set) when a packet has no pts: its timestamps are then
// not the frames' (AVI with B-frames stores decode times only) and the index must come from decoding.
FrameIndex scan_frame_index(Demuxer& demuxer, int index, bool* missing_pts);

// The index of a stream whose packets lack pts: every frame decoded once (nothing converted), with the
// timestamps the decoder gives them (pts, else best_effort_timestamp) and its key flags.
FrameIndex scan_decoded_frames(Demuxer& demuxer, int index);

}  // namespace spdl_torch::core::detail
