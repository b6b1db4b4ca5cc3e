// SPDX-License-Identifier: BSD-3-Clause
// The audio decode loop: one audio stream's frames through an AudioResampler into an AudioSink, keeping
// only the output samples of a window. The output is the ffmpeg CLI's (`-f f32le`, with -ar / -ac): the
// decoder's own trimming of priming and padding samples (skip_samples side data) and libswresample's
// defaults, its delay drained at the end. Internal header.
#pragma once

#include <cstdint>
#include <memory>

#include "core/audio_types.h"
#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// An opened audio input: its demuxer, its best audio stream and that stream's decoder (one thread).
struct AudioInput {
  explicit AudioInput(const MediaSource& source);
  AudioMetadata metadata() const;
  // The stream's length in output samples at `rate` as the container states it; -1 when not stated.
  int64_t stated_samples(int rate) const;

  MediaSource source;  // kept to reopen the input (its bytes must outlive this object, as for the Demuxer)
  Demuxer demuxer;
  int stream = -1;
  AVCodecContextPtr codec;
};

// The window of the whole output to keep, in output samples [first, end) (end < 0: to the end) when
// first >= 0, else in seconds [start, stop) (stop < 0: to the end), resolved at the output rate.
struct OutputWindow {
  double start = 0.0;
  double stop = -1.0;
  int64_t first = -1;
  int64_t end = -1;
};

// Decodes `input`'s stream per `options` (rate, channels, type, strict, max_samples; not its start/stop)
// and stores the window's samples into `sink`, stopping once the window is complete. Input before the
// window is not converted (a resampler starts on an input sample that maps to a whole output sample, with
// enough of a lead-in that the window's samples are those of the whole decode). Where seeking gives exact
// positions and the decoder keeps no state (PCM in WAV, native FLAC) a late
// window is reached by a seek; otherwise, or when the seek lands wrong, the input before it is decoded too
// (a lossy decoder's state after a seek differs: MDCT overlap, bit reservoir, prediction). sink.begin() is
// called again if the decode restarts from the beginning.
AudioDecodeResult decode_audio_stream(AudioInput& input, const AudioOptions& options, const OutputWindow& window,
                                      AudioSink& sink);

}  // namespace spdl_torch::core::detail
