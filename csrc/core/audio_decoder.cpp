// SPDX-License-Identifier: BSD-3-Clause
#include "core/audio_decoder.h"

#include <algorithm>
#include <cstring>

#include "core/detail/ffmpeg/audio_stream.h"
#include "core/errors.h"

namespace spdl_torch::core {

AudioMetadata read_audio_metadata(const MediaSource& source) {
  const detail::AudioInput input(source, false);
  return input.metadata();
}

AudioDecodeResult decode_audio(const MediaSource& source, const AudioOptions& options, AudioSink& sink) {
  options.validate();
  detail::AudioInput input(source);
  detail::OutputWindow window;
  window.start = options.start;
  window.stop = options.stop;
  return detail::decode_audio_stream(input, options, window, sink);
}

AudioBuffer::AudioBuffer(SampleType type, int64_t initial_capacity, int64_t max_samples)
    : channels_(0), bps_(sample_type_size(type)), capacity_(std::max<int64_t>(initial_capacity, 1)),
      max_samples_(std::max<int64_t>(max_samples, 1)) {}

void AudioBuffer::begin(int channels, int rate) {
  (void)rate;
  channels_ = std::max(channels, 1);
  capacity_ = std::clamp<int64_t>(capacity_, 1, std::max<int64_t>(max_samples_ / channels_, 1));
  data_.assign(size_t(channels_) * size_t(capacity_) * bps_, 0);
}

int64_t AudioBuffer::reserve(int64_t written, int64_t n) {
  if (written + n <= capacity_) return n;
  const int64_t limit = std::max<int64_t>(max_samples_ / channels_, written + n);
  const int64_t grown = std::min(std::max(written + n, capacity_ * 2), limit);
  std::vector<uint8_t> next(size_t(channels_) * size_t(grown) * bps_);
  for (int c = 0; c < channels_; ++c) {
    std::memcpy(next.data() + size_t(c) * size_t(grown) * bps_, data_.data() + size_t(c) * size_t(capacity_) * bps_,
                size_t(written) * bps_);
  }
  data_.swap(next);
  capacity_ = grown;
  return n;
}

uint8_t* AudioBuffer::channel(int c) { return data_.data() + size_t(c) * size_t(capacity_) * bps_; }

std::vector<uint8_t> AudioBuffer::take_compact(int64_t samples) {
  for (int c = 1; c < channels_; ++c) {
    std::memmove(data_.data() + size_t(c) * size_t(samples) * bps_, channel(c), size_t(samples) * bps_);
  }
  data_.resize(size_t(channels_) * size_t(samples) * bps_);
  capacity_ = 0;
  return std::move(data_);
}

namespace {

// Samples per channel to allocate up front: the window's stated length, capped at 1 Mi samples.
int64_t initial_capacity(const detail::AudioInput& input, const AudioOptions& options) {
  constexpr int64_t kCap = int64_t(1) << 20;
  const int rate = options.sample_rate > 0 ? options.sample_rate : input.stated_rate();
  if (rate <= 0) return 4096;
  int64_t stated = input.stated_samples(rate);
  if (options.stop >= 0) {
    const int64_t window = audio_sample_index(options.stop, rate) - audio_sample_index(options.start, rate);
    stated = stated < 0 ? window : std::min(stated, window);
  }
  if (stated < 0) return 65536;
  return std::clamp<int64_t>(stated + 1024, 1024, kCap);
}

}  // namespace

DecodedAudio decode_audio_to_buffer(const MediaSource& source, const AudioOptions& options) {
  options.validate();
  detail::AudioInput input(source);
  detail::OutputWindow window;
  window.start = options.start;
  window.stop = options.stop;
  AudioBuffer buffer(options.type, initial_capacity(input, options), options.max_samples);
  DecodedAudio out;
  out.result = detail::decode_audio_stream(input, options, window, buffer);
  out.samples = buffer.take_compact(out.result.written);
  return out;
}

}  // namespace spdl_torch::core
