// SPDX-License-Identifier: BSD-3-Clause
// The audio decode loop: one audio stream's frames (audio_frames.h) through an AudioResampler into an
// AudioSink, keeping only the output samples of a window. The output is the ffmpeg CLI's (`-f f32le`, with -ar /
// -ac): the decoder's own trimming of priming and padding samples (skip_samples side data) and libswresample's
// defaults, its delay drained at the end. Internal header.
#pragma once

#include <cstdint>
#include <memory>

#include "core/audio_types.h"
#include "core/detail/ffmpeg/audio_frames.h"
#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"
#include "core/detail/wav/wav_reader.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// An opened audio input: a PCM WAV that the native reader takes (detail/wav/wav_reader.h: no FFmpeg demuxer
// or decoder), else FFmpeg's demuxer, the best audio stream and that stream's decoder (one thread).
class AudioInput {
 public:
  // `native_wav` false: always FFmpeg (the metadata reader: FFmpeg's view of the stream).
  explicit AudioInput(const MediaSource& source, bool native_wav = true);
  AudioMetadata metadata() const;  // FFmpeg only
  // The stream's length in output samples at `rate` as the container states it; -1 when not stated.
  int64_t stated_samples(int rate) const;
  int stated_rate() const;  // the stream's sample rate as stated (the decoder's)
  int stated_channels() const;
  // The stream's frames (the input must outlive them).
  std::unique_ptr<AudioFrames> frames(bool strict, AudioSeekMode mode);
  const MediaSource& source() const { return source_; }

 private:
  MediaSource source_;  // kept to reopen the input (its bytes must outlive this object, as for the Demuxer)
  std::unique_ptr<WavReader> wav_;
  DemuxOptions demux_options_;
  std::unique_ptr<Demuxer> demuxer_;
  int stream_ = -1;
  AVCodecContextPtr codec_;
};

// The window of the whole output to keep, in output samples [first, end) (end < 0: to the end) when
// first >= 0, else in seconds [start, stop) (stop < 0: to the end), resolved at the output rate.
struct OutputWindow {
  double start = 0.0;
  double stop = -1.0;
  int64_t first = -1;
  int64_t end = -1;
};

// Decodes `input`'s stream per `options` (rate, channels, type, strict, max_samples, seek_mode; not its
// start/stop) and stores the window's samples into `sink`, stopping once the window is complete. Input before
// the window is not converted (a resampler starts on an input sample that maps to a whole output sample, with
// enough of a lead-in that the window's samples are those of the whole decode). A late window is reached by a
// seek where audio_seek.h allows one (with its pre-roll; the native WAV reader: arithmetic); when a seek lands
// where the samples could differ, the input is reopened and decoded from the start (sink.begin() is then
// called again).
AudioDecodeResult decode_audio_stream(AudioInput& input, const AudioOptions& options, const OutputWindow& window,
                                      AudioSink& sink);

}  // namespace spdl_torch::core::detail
