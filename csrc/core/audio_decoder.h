// SPDX-License-Identifier: BSD-3-Clause
// Audio decoding: metadata without decoding, and a whole stream or a window of it decoded, resampled and
// mixed into planar float32 / int16 samples equal to the ffmpeg CLI's (`ffmpeg -i F -f f32le` with -ar /
// -ac: libswresample's defaults). Plain C++, no torch headers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/audio_types.h"
#include "core/media_source.h"

namespace spdl_torch::core {

// The best audio stream's metadata (libavformat's stream information; nothing is decoded).
// DecodeError (no audio stream, unknown codec, unreadable input) or IOError (a path that cannot be opened).
AudioMetadata read_audio_metadata(const MediaSource& source);

// Decodes `source` per `options` into `sink`: the output samples [round(start * r), round(stop * r)) of the
// whole decode at the output rate r (to the end when stop < 0). DecodeError / IOError as above, or for a
// packet the decoder rejects (strict), a truncated PCM/FLAC stream (strict), an absurd rate or channel count,
// or an output over options.max_samples.
AudioDecodeResult decode_audio(const MediaSource& source, const AudioOptions& options, AudioSink& sink);

// A sink that grows as samples arrive (planar, one row of `capacity()` samples per channel).
class AudioBuffer : public AudioSink {
 public:
  // The rows are allocated by begin() (the channel count is the first frame's, or the requested one). They
  // grow by doubling, but never past max_samples / channels samples (the decode's own limit, which the
  // decode loop checks before it asks for room).
  AudioBuffer(SampleType type, int64_t initial_capacity, int64_t max_samples = kDefaultMaxAudioSamples);
  void begin(int channels, int rate) override;
  int64_t reserve(int64_t written, int64_t n) override;
  uint8_t* channel(int c) override;
  // Moves the rows together so the first `samples` of each channel are contiguous ([C, samples] row-major),
  // and hands the bytes over.
  std::vector<uint8_t> take_compact(int64_t samples);
  int channels() const { return channels_; }

 private:
  int channels_;
  size_t bps_;
  int64_t capacity_;
  int64_t max_samples_;
  std::vector<uint8_t> data_;
};

// Decodes into an AudioBuffer sized from the container's stated duration (at most 1 Mi samples per channel
// up front, so an absurd stated length allocates nothing big).
struct DecodedAudio {
  AudioDecodeResult result;
  std::vector<uint8_t> samples;  // [num_channels, written] row-major, in options.type
};
DecodedAudio decode_audio_to_buffer(const MediaSource& source, const AudioOptions& options);

}  // namespace spdl_torch::core
