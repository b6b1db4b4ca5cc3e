// SPDX-License-Identifier: BSD-3-Clause
// Video decoding's public types: what a file's header says (VideoMetadata), how frames are read
// (VideoReadOptions, SeekMode), one converted frame handed to the caller (VideoFrame), and the error for a
// frame request outside the stream (FrameRangeError). Plain C++, no FFmpeg types.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/image_types.h"

namespace spdl_torch::core {

// Exact: the frames' presentation timestamps are read from every packet once per reader (no decoding), so
// frame i is the i-th frame in presentation order and "the frame displayed at t" is exact. Approximate:
// frame i is taken at start + i / average_fps (no scan), as torchcodec's approximate mode.
enum class SeekMode { Exact, Approximate };
SeekMode parse_seek_mode(const std::string& name);  // "exact", "approximate"; InvalidArgument otherwise

// A frame index or timestamp outside the stream (the op layer turns it into Python's IndexError).
class FrameRangeError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

// The times a stream's frames are displayed, in seconds: [begin, end), the span frames are asked for by
// timestamp in (torchcodec's begin_stream_seconds / end_stream_seconds).
struct SecondsSpan {
  double begin = 0;
  double end = 0;
};

// Frames of one call above this many are refused before any memory is allocated.
constexpr int64_t kDefaultMaxVideoFrames = 4096;
// A call's output tensor above this many bytes (16 GiB) is refused before it is allocated.
constexpr int64_t kDefaultMaxVideoOutputBytes = int64_t(1) << 34;

struct VideoMetadata {
  int stream_index = -1;
  std::string container;      // libavformat's demuxer name ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", ...)
  std::string codec;          // "h264", "vp9", ...
  std::string pixel_format;   // "yuv420p", ... ("" when unknown)
  int64_t width = 0;          // decoded frame size, before the rotation
  int64_t height = 0;
  int rotation = 0;           // clockwise degrees applied for display: 0, 90, 180, 270 (the display matrix)
  int64_t time_base_num = 0;  // the stream's time base (seconds per pts unit)
  int64_t time_base_den = 1;
  double start_time = 0;      // seconds: the header's start time (0 when the container has none); the first
                              // frame may be displayed later (an AVI with B-frames: one frame later)
  double duration = -1;       // seconds; -1 when unknown
  double average_fps = -1;    // frames per second; -1 when unknown
  int64_t num_frames = -1;    // -1 when unknown
  bool num_frames_counted = false;  // true: counted from the packets (exact); false: the container's header
  int64_t bit_rate = 0;       // bits per second (0: unknown)
  std::vector<double> key_frame_times;  // seconds, from the container's index (empty when it has none)

  int64_t display_width() const { return rotation % 180 ? height : width; }
  int64_t display_height() const { return rotation % 180 ? width : height; }
};

struct VideoReadOptions {
  int stream = -1;           // -1: FFmpeg's best video stream
  int threads = 1;           // FFmpeg decoder threads (0: FFmpeg picks)
  SeekMode seek_mode = SeekMode::Exact;
  bool strict = true;        // corrupt packets / frames raise DecodeError; else they are counted and marked
  int64_t max_pixels = kDefaultMaxPixels;  // per frame (<= 0: no limit), checked from the header
  bool apply_rotation = true;   // rotate frames as the display matrix says (as the ffmpeg CLI's autorotate)
  bool skip_nonref = true;      // let the decoder skip non-reference frames nobody asked for (skip_frame)

  void validate() const;  // InvalidArgument for threads < 0, stream < -1
};

// One decoded frame in RGB (HWC uint8, rows `row_bytes` apart), rotated for display when asked.
struct VideoFrame {
  const uint8_t* rgb = nullptr;
  int64_t height = 0;
  int64_t width = 0;
  int64_t row_bytes = 0;
  double pts = 0;            // presentation time, seconds
  int64_t index = 0;         // frame index in presentation order
  bool corrupt = false;      // the decoder flagged it (lenient mode only; strict raises)
};

// Receives the frame wanted at position k of a request (a frame asked for twice is handed over twice).
// `frame` is nullptr when the frame could not be produced in lenient mode (the slot must be filled by the
// caller, e.g. zeros, and reported).
using FrameSink = std::function<void(size_t k, const VideoFrame* frame)>;

}  // namespace spdl_torch::core
