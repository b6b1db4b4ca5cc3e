// SPDX-License-Identifier: BSD-3-Clause
// A stream's decoded frames, in the order of a decode from the start, with a seek that lands on a known
// position: the interface the audio decode loop (audio_stream.cpp) reads, and its FFmpeg implementation
// (libavformat + libavcodec, seeking per audio_seek.h). The native WAV reader's: wav_frames.h. Internal header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/audio_types.h"
#include "core/detail/ffmpeg/audio_index.h"
#include "core/detail/ffmpeg/audio_seek.h"
#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"
#include "core/detail/ffmpeg/frame_reader.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// Thrown when a seek landed where its samples could differ from the whole decode's (a timestamp that does not
// match, packets the index does not list, a frame of another length): the caller decodes from the start
// instead, from a fresh input.
struct SeekUnusable {};

enum class SeekResult {
  NotSeeked,  // nothing changed: decoding goes on from where it is
  Seeked,     // the next frames start at or before the target, at known positions
  PastEnd,    // the stream ends before the target (*total: its length in input samples)
};

class AudioFrames {
 public:
  virtual ~AudioFrames() = default;
  // The next frame into `frame` (unreferenced first). *position: the whole decode's index (in input samples)
  // of its first sample when the source knows it (after a seek), else -1 (it follows the previous frame).
  // False at the end of the stream.
  virtual bool next(AVFrame* frame, int64_t* position) = 0;
  // Called once, after the first frame (of `first_samples` samples): makes the next frames start at or before
  // input sample `target`, with frames before it still coming (the caller drops them).
  virtual SeekResult seek(int64_t target, int first_samples, int64_t* total) = 0;
  virtual int64_t corrupt_packets() const = 0;  // frames or packets skipped (strict = false)
  virtual int64_t flagged_packets() const = 0;  // packets the demuxer flagged corrupt (a truncated read)
  // The stream's length in samples as its header states it where that is exact (PCM, FLAC), else -1.
  virtual int64_t exact_length() const = 0;
  virtual std::string codec_name() const = 0;
  virtual std::string format_name() const = 0;
};

// Frames through FFmpeg from an opened demuxer and decoder (owned by the caller, who keeps them alive).
class FfmpegAudioFrames : public AudioFrames {
 public:
  // `demux_options`: how `demuxer` was opened (a packet index opens the input again the same way).
  FfmpegAudioFrames(const MediaSource& source, const DemuxOptions& demux_options, Demuxer& demuxer, int stream,
                    AVCodecContext* codec, bool strict, AudioSeekMode mode);
  bool next(AVFrame* frame, int64_t* position) override;
  SeekResult seek(int64_t target, int first_samples, int64_t* total) override;
  int64_t corrupt_packets() const override { return reader_.corrupt_packets(); }
  int64_t flagged_packets() const override { return reader_.flagged_packets(); }
  int64_t exact_length() const override;
  std::string codec_name() const override;
  std::string format_name() const override { return demuxer_.format_name(); }

 private:
  SeekResult seek_by_timestamp(int64_t target, int first_samples);
  SeekResult seek_flac(int64_t target, int first_samples);
  SeekResult seek_by_index(int64_t target, int64_t* total);
  bool accept_indexed(AVPacket* packet);
  int64_t next_output(int64_t from) const;  // the first packet from `from` whose frame keeps samples

  const MediaSource& source_;
  DemuxOptions demux_options_;
  Demuxer& demuxer_;
  int stream_;
  AVCodecContext* codec_;
  AudioSeekMode mode_;
  FrameReader reader_;
  int64_t origin_ = AV_NOPTS_VALUE;  // the first frame's pts: the position of output sample 0
  int first_rate_ = 0;               // the first frame's sample rate
  bool first_ = true;
  // A timestamp seek: the next frame must land at or before landing_target_ (exactly on it, aligned).
  bool check_landing_ = false;
  bool aligned_ = false;
  int64_t landing_target_ = 0;
  // A byte seek to a FLAC frame: its position (landing_target_) goes with the next frame.
  bool byte_landing_ = false;
  bool flac_landed_ = false;
  // A seek by packet index: packets from first_packet_ on, identified in order (next_packet_), their frames
  // tagged with their packet number; every frame after the first packet's must come in order (next_frame_) with
  // the index's length; exact_packet_ holds the target.
  std::shared_ptr<const PacketIndex> index_;
  int64_t first_packet_ = 0, exact_packet_ = 0, next_packet_ = 0, next_frame_ = 0;
};

}  // namespace spdl_torch::core::detail
