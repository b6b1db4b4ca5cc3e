// SPDX-License-Identifier: BSD-3-Clause
// The exact frame index of a video stream: every packet's presentation timestamp, read once (no
// decoding), sorted into presentation order, and the key frames to seek to. Streams whose packets cannot
// name their frames (no pts, or pts that repeat or restart) are indexed by one decode instead. Internal header.
#pragma once

#include <cstdint>
#include <vector>

#include "core/detail/ffmpeg/demux.h"

namespace spdl_torch::core::detail {

struct FrameIndex {
  std::vector<int64_t> pts;       // frame i's pts (stream time base), ascending: presentation order
                                  // (decode_order: in the decoder's output order, not ascending)
  std::vector<int64_t> key_pts;   // the key frames' pts, ascending
  std::vector<int64_t> key_seek;  // where to seek for key k (its pts; decoded index: its packet's dts)
  int64_t end_pts = 0;            // the last frame's pts plus its duration (at least pts + 1)
  bool decoded = false;           // built by decoding (packets without pts), see scan_decoded_frames
  // The decoded frames' timestamps do not increase (they repeat or restart, e.g. two streams joined):
  // frame i is the i-th frame the decoder outputs from the start of the stream (the ffmpeg CLI's order),
  // found by counting, never by pts; `pts` are then no presentation order and address no frame.
  bool decode_order = false;
  int64_t restart = -1;           // decode_order: the first frame whose timestamp does not increase

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
// Packets without pts and dts are not frames of the index; packets flagged discard (AV_PKT_FLAG_DISCARD:
// mov samples outside the edit list) are decoded but output no frame, so they are key frames to seek to
// but no frames of the index.
// Returns an empty index (pts.empty(), `needs_decoding` set) when the packets' pts cannot name the frames:
// a packet without pts (AVI with B-frames stores decode times only), a pts repeated, or a pts lower than
// more than kMaxReorderedFrames earlier packets' (the timestamps restart: no decoder reorders that far).
// The index must then come from decoding.
FrameIndex scan_frame_index(Demuxer& demuxer, int index, bool* needs_decoding);

// The most frames that may precede a frame in decode order and follow it in presentation order (H.264 /
// HEVC's max_num_reorder_frames is at most 16; other codecs reorder less).
constexpr size_t kMaxReorderedFrames = 16;

// The index from decoding (packets without usable pts): every frame decoded once (nothing converted),
// with the timestamps the decoder gives them (pts, else best_effort_timestamp) and its key flags; in
// decode order (decode_order set) when those timestamps do not increase.
FrameIndex scan_decoded_frames(Demuxer& demuxer, int index);

}  // namespace spdl_torch::core::detail
