// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_resampler.h"

extern "C" {
#include <libavutil/opt.h>
}

#include <algorithm>
#include <climits>
#include <new>
#include <string>

#include "core/detail/ffmpeg/swr_pool.h"
#include "core/errors.h"

namespace spdl_torch::core::detail {
namespace {

void check_rate(int rate, const char* what) {
  if (rate <= 0 || rate > kMaxAudioSampleRate) {
    throw DecodeError(std::string("absurd ") + what + " sample rate " + std::to_string(rate) + " Hz (accepted: 1 to " +
                      std::to_string(kMaxAudioSampleRate) + " Hz)");
  }
}

}  // namespace

AudioResampler::AudioResampler(const AVFrame* frame, int out_rate, int out_channels, SampleType type)
    : in_format_(static_cast<AVSampleFormat>(frame->format)),
      in_rate_(frame->sample_rate),
      out_rate_(out_rate > 0 ? out_rate : frame->sample_rate),
      bytes_per_sample_(av_get_bytes_per_sample(static_cast<AVSampleFormat>(frame->format))),
      planar_(av_sample_fmt_is_planar(static_cast<AVSampleFormat>(frame->format)) != 0) {
  check_rate(in_rate_, "input");
  check_rate(out_rate_, "output");
  if (int64_t(in_rate_) > int64_t(out_rate_) * kMaxResampleRatio ||
      int64_t(out_rate_) > int64_t(in_rate_) * kMaxResampleRatio) {
    throw DecodeError("resampling " + std::to_string(in_rate_) + " Hz to " + std::to_string(out_rate_) +
                      " Hz exceeds the ratio limit of " + std::to_string(kMaxResampleRatio));
  }
  const int channels = frame->ch_layout.nb_channels;
  if (channels < 1 || channels > kMaxAudioChannels) {
    throw DecodeError("absurd channel count " + std::to_string(channels) + " (accepted: 1 to " +
                      std::to_string(kMaxAudioChannels) + ")");
  }
  if (bytes_per_sample_ <= 0) throw DecodeError("the decoder returned frames without a sample format");
  if (av_channel_layout_copy(&in_layout_.layout, &frame->ch_layout) < 0) throw std::bad_alloc();
  if (in_layout_.layout.order == AV_CHANNEL_ORDER_UNSPEC) {
    av_channel_layout_default(&swr_in_.layout, channels);
  } else if (av_channel_layout_copy(&swr_in_.layout, &in_layout_.layout) < 0) {
    throw std::bad_alloc();
  }
  if (out_channels > 0) {
    av_channel_layout_default(&out_layout_.layout, out_channels);
  } else if (av_channel_layout_copy(&out_layout_.layout, &swr_in_.layout) < 0) {
    throw std::bad_alloc();
  }
  out_format_ = type == SampleType::Float32 ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_S16P;
  swr_ = acquire_swr(out_layout_.layout, out_format_, out_rate_, swr_in_.layout, in_format_, in_rate_);
}

AudioResampler::~AudioResampler() {
  try {
    release_swr(std::move(swr_), out_layout_.layout, out_format_, out_rate_, swr_in_.layout, in_format_, in_rate_);
  } catch (const std::bad_alloc&) {  // the context is freed instead
  }
}

bool AudioResampler::matches(const AVFrame* frame) const {
  return frame->format == in_format_ && frame->sample_rate == in_rate_ &&
         av_channel_layout_compare(&frame->ch_layout, &in_layout_.layout) == 0;
}

int AudioResampler::convert(const AVFrame* frame, int offset, int in_count, uint8_t* const* out, int capacity) {
  const uint8_t* in[kMaxAudioChannels];
  const int channels = frame->ch_layout.nb_channels;
  if (planar_) {
    for (int c = 0; c < channels; ++c) in[c] = frame->extended_data[c] + size_t(offset) * bytes_per_sample_;
  } else {
    in[0] = frame->extended_data[0] + size_t(offset) * bytes_per_sample_ * channels;
  }
  const int n = swr_convert(swr_.get(), const_cast<uint8_t**>(out), capacity, in, in_count);
  if (n < 0) throw_ffmpeg_error("the resampler failed", n);
  return n;
}

int AudioResampler::flush(uint8_t* const* out, int capacity) {
  const int n = swr_convert(swr_.get(), const_cast<uint8_t**>(out), capacity, nullptr, 0);
  if (n < 0) throw_ffmpeg_error("the resampler failed to drain", n);
  return n;
}

int AudioResampler::max_output(int in_count) const {
  const int n = swr_get_out_samples(swr_.get(), in_count);
  if (n < 0) throw_ffmpeg_error("the resampler cannot size its output", n);
  return n;
}

}  // namespace spdl_torch::core::detail
