// SPDX-License-Identifier: BSD-3-Clause
// Audio decode options, stream metadata and the output sink, shared by the audio decoder and its batch
// decoder. Plain C++, no FFmpeg types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core {

// Output sample type: float32 (libswresample's s16 -> float is x / 32768) or int16.
enum class SampleType { Float32, Int16 };

size_t sample_type_size(SampleType type);

// What the container and codec parameters state about the best audio stream, without decoding.
struct AudioMetadata {
  int stream_index = -1;
  int sample_rate = 0;           // Hz
  int num_channels = 0;
  std::string channel_layout;    // FFmpeg's description: "mono", "stereo", "5.1(side)", "3 channels"
  std::string codec;             // FFmpeg's codec name: "pcm_s16le", "flac", "mp3", "vorbis", "opus"
  std::string sample_format;     // the decoder's sample format: "s16", "fltp", ... ("" when unstated)
  std::string format;            // the container (demuxer) name: "wav", "ogg", "mp3", "matroska,webm"
  double duration_seconds = -1;  // the stream's (else the container's) duration; < 0: not stated
  int64_t num_frames = -1;       // samples per channel the stream's duration states; -1: not stated
  int64_t bit_rate = 0;          // bits per second (0: not stated)
};

// Largest input/output sample rate accepted (Hz) and the largest resampling ratio (either way): beyond
// them a header is treated as absurd rather than building a huge resampling filter.
constexpr int kMaxAudioSampleRate = 1 << 20;
constexpr int kMaxResampleRatio = 128;
// libswresample's channel limit (SWR_CH_MAX).
constexpr int kMaxAudioChannels = 64;
// Default cap on the output samples of one decode (channels x samples).
constexpr int64_t kDefaultMaxAudioSamples = int64_t(1) << 30;

// A decode whose output would pass AudioOptions::max_samples: a DecodeError for one decode (the length is
// only known while decoding); the batch decoder tells it from a bad file (the call's size limit).
class AudioOutputLimit : public DecodeError {
 public:
  using DecodeError::DecodeError;
};

// The output sample index of a time t at rate r: floor(t * r + 0.5) (round half up).
int64_t audio_sample_index(double seconds, int rate);

// How a window far from the start is reached. Exact: its samples are the whole decode's, bit for bit (Opus,
// whose decoder state after a seek never becomes the whole decode's exactly, decodes from the start).
// Approximate: Opus seeks too, with RFC 7845's 80 ms pre-roll (its samples then differ from the whole
// decode's by at most the bound docs/audio.md states); every other input is exact in both modes.
enum class AudioSeekMode { Exact, Approximate };
AudioSeekMode parse_audio_seek_mode(const std::string& name);  // "exact", "approximate"; InvalidArgument otherwise

struct AudioOptions {
  int sample_rate = 0;    // output rate in Hz; 0: the source's
  int num_channels = 0;   // output channels (the ffmpeg CLI's -ac rule); 0: the source's
  double start = 0.0;     // window start in seconds from the first decoded sample
  double stop = -1.0;     // window stop in seconds; < 0: the end of the stream
  SampleType type = SampleType::Float32;
  bool strict = true;     // a packet the decoder rejects (or a truncated PCM/FLAC stream) raises DecodeError
  int64_t max_samples = kDefaultMaxAudioSamples;  // channels x samples of the output; DecodeError beyond
  AudioSeekMode seek_mode = AudioSeekMode::Approximate;

  // InvalidArgument naming the bad value.
  void validate() const;
};

// Where decoded samples go: planar, channel c's samples at channel(c)[0..capacity).
class AudioSink {
 public:
  virtual ~AudioSink() = default;
  // Called before the first reserve(), with the output's channel count and rate (again, with the same
  // values, when a decode restarts from the beginning: the samples written so far are then rewritten).
  virtual void begin(int channels, int rate) {
    (void)channels;
    (void)rate;
  }
  // Called before samples [written, written + n) are stored: makes room for them if it can. Returns how
  // many of the n fit (fewer, down to 0, for a fixed slot that is full).
  virtual int64_t reserve(int64_t written, int64_t n) = 0;
  // Channel c's first sample; valid until the next reserve().
  virtual uint8_t* channel(int c) = 0;
};

// What one decode produced.
struct AudioDecodeResult {
  int sample_rate = 0;           // of the output
  int num_channels = 0;          // of the output
  int64_t written = 0;           // samples per channel stored into the sink
  int64_t first = 0;             // the window's first sample index in the whole output
  bool reached_end = false;      // the stream was decoded to its end
  int64_t total = -1;            // when reached_end: the whole output's length in samples
  int64_t corrupt_packets = 0;   // non-strict: packets or frames the decoder rejected
};

}  // namespace spdl_torch::core
