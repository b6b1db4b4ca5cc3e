// SPDX-License-Identifier: BSD-3-Clause
// One libswresample context configured for one input stream configuration (sample format, rate, channel
// layout) exactly as the ffmpeg CLI's filter graph configures its auto-inserted aresample filter:
// libswresample's default options, an unspecified input layout replaced by FFmpeg's default layout for its
// channel count (the CLI's "Guessed Channel Layout"), and a requested channel count mapped to FFmpeg's
// default layout for that count (the CLI's -ac). Output is planar float32 or int16. Internal header.
#pragma once

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

#include <cstdint>

#include "core/audio_types.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"

namespace spdl_torch::core::detail {

class AudioResampler {
 public:
  // For frames shaped like `frame`; out_rate 0: the frame's rate; out_channels 0: the frame's layout.
  // DecodeError for an absurd rate or channel count, or when libswresample refuses the configuration.
  AudioResampler(const AVFrame* frame, int out_rate, int out_channels, SampleType type);
  ~AudioResampler();
  AudioResampler(const AudioResampler&) = delete;
  AudioResampler& operator=(const AudioResampler&) = delete;

  // Whether `frame` has the sample format, rate and channel layout this context was built for.
  bool matches(const AVFrame* frame) const;

  // Converts in_count samples of `frame` from sample `offset` on, writing up to `capacity` samples per
  // channel to out[c]; returns the number written (the rest stays buffered for the next call).
  int convert(const AVFrame* frame, int offset, int in_count, uint8_t* const* out, int capacity);
  // Drains the buffered samples (the resampler's delay, mirrored at the end): returns the number written.
  int flush(uint8_t* const* out, int capacity);
  // An upper bound of the samples the next convert of in_count samples (or a flush: 0) can return.
  int max_output(int in_count) const;

  int in_rate() const { return in_rate_; }
  int out_rate() const { return out_rate_; }
  int out_channels() const { return out_layout_.layout.nb_channels; }
  bool resamples() const { return in_rate_ != out_rate_; }

 private:
  SwrContextPtr swr_;
  AVSampleFormat in_format_;
  int in_rate_;
  int out_rate_;
  OwnedChannelLayout in_layout_;  // as given by the frames (possibly unspecified order)
  OwnedChannelLayout swr_in_;     // as libswresample gets it (an unspecified order: the count's default)
  OwnedChannelLayout out_layout_;
  AVSampleFormat out_format_ = AV_SAMPLE_FMT_NONE;
  int bytes_per_sample_;
  bool planar_;
};

}  // namespace spdl_torch::core::detail
