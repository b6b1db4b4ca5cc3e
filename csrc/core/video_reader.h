// SPDX-License-Identifier: BSD-3-Clause
// VideoReader: one video stream of a MediaSource, decoded by frame index or timestamp with exact
// semantics. Frame i is the i-th frame in presentation order; "the frame at t" is the frame displayed at t
// (pts_i <= t < pts_{i+1}). Requests in any order (backwards, repeated) give the frames a linear decode
// gives: the reader seeks to the key frame at or before the first wanted frame of a group of pictures and
// decodes forward, converting only the wanted frames. The index (every packet's pts) is built once per
// reader and reused. Not thread-safe: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/media_source.h"
#include "core/video_types.h"

namespace spdl_torch::core {

class VideoReader {
 public:
  // Opens the source and its video stream. DecodeError: no video stream, unreadable or unknown codec,
  // a frame over max_pixels; IOError: a path cannot be opened. Builds no index yet.
  VideoReader(const MediaSource& source, const VideoReadOptions& options);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  // The header's metadata; num_frames from the container when it has it, else counted from the packets
  // (num_frames_counted).
  const VideoMetadata& metadata();

  // Frames the reader can address: exact: the packets' count (builds the index); approximate: the
  // header's count (DecodeError when the header has neither a count nor a duration and rate).
  int64_t num_frames();

  // The span index_at accepts with seek mode `mode` (index_at: the reader's own). Exact: [frame 0's pts,
  // the last frame's pts + its duration) (builds the index; the header's start may precede the first frame);
  // nullopt when the timestamps do not increase (no timestamp names a single frame). Approximate: [start,
  // start + count / average_fps) from the header (DecodeError when it has neither a count nor a duration and
  // rate).
  std::optional<SecondsSpan> seconds_span(SeekMode mode);

  // The key frames' presentation times (seconds, ascending) with seek mode `mode`. Exact: the pts of the frames
  // whose packets are flagged key (the ones ffprobe marks K; builds the index); approximate, or an index whose
  // timestamps do not increase: the container index's entries (metadata().key_frame_times: mov stores decode
  // times there, which precede the pts by the reorder delay).
  std::vector<double> key_frame_times(SeekMode mode);

  // The frame displayed at `seconds` (pts seconds of the stream). FrameRangeError outside the span of
  // seconds_span(the reader's seek mode); DecodeError when that is nullopt.
  int64_t index_at(double seconds);

  // Frame i's presentation time (seconds): exact: its pts; approximate: start + i / average_fps.
  // FrameRangeError outside [0, num_frames()).
  double frame_time(int64_t i);
  // The end of the last frame (seconds): exact: its pts plus its duration; approximate: start + count / fps.
  double end_time();

  // Decodes frames `indices` (any order, repeats allowed) and hands each to sink(k, frame) (k: position in
  // `indices`), in the order the decoder produces them. FrameRangeError for an index outside
  // [0, num_frames()), checked before decoding.
  void decode(const std::vector<int64_t>& indices, const FrameSink& sink);

  // Packets and frames the decoder rejected or flagged so far (lenient mode).
  int64_t corrupt_packets() const;

  // Frames that went through colour conversion so far (tests: frames not wanted are not converted).
  int64_t converted_frames() const;
  // Packets sent with skip_frame = AVDISCARD_NONREF so far (tests).
  int64_t skipped_packets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spdl_torch::core
