// SPDX-License-Identifier: BSD-3-Clause
#include "core/audio_batch.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>

#include "core/audio_decoder.h"
#include "core/crop_geometry.h"
#include "core/detail/ffmpeg/audio_stream.h"
#include "core/errors.h"
#include "core/seconds_text.h"

namespace spdl_torch::core {

void AudioBatchOptions::validate() const {
  if (sample_rate < 1 || sample_rate > kMaxAudioSampleRate) {
    throw InvalidArgument("expected sample_rate in [1, " + std::to_string(kMaxAudioSampleRate) + "] Hz, got " +
                          std::to_string(sample_rate));
  }
  if (num_channels < 1 || num_channels > kMaxAudioChannels) {
    throw InvalidArgument("expected num_channels in [1, " + std::to_string(kMaxAudioChannels) + "], got " +
                          std::to_string(num_channels));
  }
  if (std::isnan(duration) || std::isinf(duration) || duration > 1e6) {
    throw InvalidArgument("expected a finite duration below 1e6 seconds, got " + seconds_text(duration));
  }
  if (duration > 0 && window_samples() < 1) {
    throw InvalidArgument("duration " + seconds_text(duration) + " is under one sample at " +
                          std::to_string(sample_rate) + " Hz");
  }
  if (random_crop && duration <= 0) throw InvalidArgument("random_crop needs a duration > 0");
  if (duration > 0 && window_samples() * num_channels > max_samples) {
    throw InvalidArgument("a window of " + std::to_string(window_samples()) + " samples x " +
                          std::to_string(num_channels) + " channels exceeds max_samples = " + std::to_string(max_samples));
  }
  if (max_samples < 1) throw InvalidArgument("expected max_samples >= 1, got " + std::to_string(max_samples));
}

int64_t AudioBatchOptions::window_samples() const {
  return duration > 0 ? audio_sample_index(duration, sample_rate) : -1;
}

namespace {

// A fixed slot: channel rows of `length` samples, stride_c apart.
class SlotSink : public AudioSink {
 public:
  SlotSink(uint8_t* base, int64_t stride_c_bytes, int64_t length)
      : base_(base), stride_c_(stride_c_bytes), length_(length) {}
  int64_t reserve(int64_t written, int64_t n) override { return std::max<int64_t>(0, std::min(n, length_ - written)); }
  uint8_t* channel(int c) override { return base_ + c * stride_c_; }

 private:
  uint8_t* base_;
  int64_t stride_c_;
  int64_t length_;
};

int64_t input_bytes(const MediaSource& s) {
  if (s.in_memory()) return int64_t(s.size);
  struct stat st{};
  return ::stat(s.path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

AudioOptions item_options(const AudioBatchOptions& o) {
  AudioOptions a;
  a.sample_rate = o.sample_rate;
  a.num_channels = o.num_channels;
  a.type = o.type;
  a.strict = o.strict;
  a.max_samples = o.max_samples;
  a.seek_mode = o.seek_mode;
  return a;
}

// The random crop's first sample: randint(length - window + 1) of SplitMix64(seed); 0 when the length is
// unknown (< 0) or not longer than the window.
int64_t crop_start(int64_t seed, int64_t length, int64_t window) {
  if (length <= window) return 0;
  SplitMix64 rng(seed);
  return rng.randint(length - window + 1);
}

std::string item_name(const AudioBatchItem& item, int64_t i) {
  return item.source.in_memory() ? "sample " + std::to_string(i) : item.source.path;
}

std::string samples_text(int64_t samples, size_t bps) {
  return std::to_string(samples) + " samples (" + std::to_string(double(samples) * double(bps) / double(1 << 30)) +
         " GiB)";
}

void zero_slot(const AudioSlots& slots, int64_t i, int channels, size_t bps, int64_t from) {
  if (from >= slots.length) return;
  for (int c = 0; c < channels; ++c) {
    uint8_t* row = slots.data + size_t(i * slots.stride_b + c * slots.stride_c) * bps;
    std::memset(row + size_t(from) * bps, 0, size_t(slots.length - from) * bps);
  }
}

}  // namespace

AudioBatchResult decode_audio_batch(const std::vector<AudioBatchItem>& items, const AudioBatchOptions& options,
                                    const std::function<AudioSlots(int64_t)>& allocate, ThreadPool& pool,
                                    const std::function<void()>& on_last_started) {
  options.validate();
  const int64_t n = int64_t(items.size());
  const size_t bps = sample_type_size(options.type);
  AudioBatchResult r;
  r.lengths.assign(size_t(n), 0);
  r.offsets.assign(size_t(n), 0);
  r.errors.assign(size_t(n), "");
  r.io_errno.assign(size_t(n), -1);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> cost(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) cost[size_t(i)] = input_bytes(items[size_t(i)].source);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cost[size_t(a)] > cost[size_t(b)]; });
  AudioOptions item_opt = item_options(options);
  // Items whose output alone passes their share of the batch's max_samples (whole files).
  std::vector<char> over_limit(size_t(n), 0);

  // Runs fn for item i; a bad item (DecodeError, IOError, out of memory) is recorded as its error.
  auto recording = [&](int64_t i, auto&& fn) {
    try {
      fn();
    } catch (const AudioOutputLimit& e) {
      r.errors[size_t(i)] = e.what();
      over_limit[size_t(i)] = 1;
    } catch (const DecodeError& e) {
      r.errors[size_t(i)] = e.what();
    } catch (const IOError& e) {
      r.errors[size_t(i)] = e.what();
      r.io_errno[size_t(i)] = e.code();
    } catch (const std::bad_alloc& e) {
      r.errors[size_t(i)] = e.what();
    }
  };

  if (options.duration > 0) {
    const int64_t len = options.window_samples();
    // validate() bounds one window by max_samples, so n * len * channels cannot overflow before this check.
    if (n > 0 && len * options.num_channels > options.max_samples / n) {
      throw InvalidArgument("a batch of " + std::to_string(n) + " x " + std::to_string(options.num_channels) +
                            " channels x " + std::to_string(len) + " samples exceeds max_samples = " +
                            samples_text(options.max_samples, bps) + " (raise max_samples)");
    }
    const AudioSlots slots = allocate(len);
    pool.parallel_for(
        order,
        [&](int64_t i) {
          const AudioBatchItem& item = items[size_t(i)];
          uint8_t* base = slots.data + size_t(i * slots.stride_b) * bps;
          int64_t written = 0;
          recording(i, [&] {
            auto input = std::make_unique<detail::AudioInput>(item.source);
            detail::OutputWindow window;
            window.first = options.random_crop ? crop_start(item.seed, input->stated_samples(options.sample_rate), len)
                                               : audio_sample_index(item.start, options.sample_rate);
            window.end = window.first + len;
            r.offsets[size_t(i)] = window.first;
            SlotSink sink(base, slots.stride_c * int64_t(bps), len);
            AudioDecodeResult got = detail::decode_audio_stream(*input, item_opt, window, sink);
            // A random crop that the stream ends inside: drawn again from the decoded length (a truncated
            // file, a header that overstates its length), so no crop is cut short, or all zeros, while the
            // stream holds N samples. A second redraw only follows a first pass that ended before its
            // window's lead-in, whose length is libswresample's count within its rounding.
            for (int pass = 0; options.random_crop && pass < 2 && got.written < len && got.reached_end; ++pass) {
              const int64_t first = crop_start(item.seed, got.total, len);
              if (first == window.first) break;
              window.first = first;
              window.end = first + len;
              r.offsets[size_t(i)] = first;
              input = std::make_unique<detail::AudioInput>(item.source);
              got = detail::decode_audio_stream(*input, item_opt, window, sink);
            }
            written = got.written;
          });
          r.lengths[size_t(i)] = r.errors[size_t(i)].empty() ? written : 0;
          zero_slot(slots, i, options.num_channels, bps, r.lengths[size_t(i)]);
        },
        on_last_started);
    return r;
  }

  // Whole files: decode each into its own buffer, then copy into the slots of the longest. Each file may
  // take max_samples / n samples (all channels): n files padded to the longest fit in max_samples exactly
  // when none takes more.
  if (n > options.max_samples) {
    throw InvalidArgument("a batch of " + std::to_string(n) + " inputs exceeds max_samples = " +
                          samples_text(options.max_samples, bps) + " (raise max_samples)");
  }
  if (n > 0) item_opt.max_samples = options.max_samples / n;
  std::vector<std::vector<uint8_t>> decoded(static_cast<size_t>(n));
  pool.parallel_for(
      order,
      [&](int64_t i) {
        recording(i, [&] {
          DecodedAudio d = decode_audio_to_buffer(items[size_t(i)].source, item_opt);
          r.lengths[size_t(i)] = d.result.written;
          decoded[size_t(i)] = std::move(d.samples);
        });
      },
      on_last_started);
  for (int64_t i = 0; i < n; ++i) {
    if (!over_limit[size_t(i)]) continue;
    throw InvalidArgument(item_name(items[size_t(i)], i) + ": decodes to more than " +
                          std::to_string(item_opt.max_samples / options.num_channels) + " samples x " +
                          std::to_string(options.num_channels) + " channels, so the batch of " + std::to_string(n) +
                          " padded to it exceeds max_samples = " + samples_text(options.max_samples, bps) +
                          " (raise max_samples, or decode windows: duration)");
  }
  const int64_t longest = n == 0 ? 0 : *std::max_element(r.lengths.begin(), r.lengths.end());
  const AudioSlots slots = allocate(longest);
  pool.parallel_for(order, [&](int64_t i) {
    const int64_t len = r.lengths[size_t(i)];
    for (int c = 0; c < options.num_channels && len > 0; ++c) {
      std::memcpy(slots.data + size_t(i * slots.stride_b + c * slots.stride_c) * bps,
                  decoded[size_t(i)].data() + size_t(c) * size_t(len) * bps, size_t(len) * bps);
    }
    std::vector<uint8_t>().swap(decoded[size_t(i)]);
    zero_slot(slots, i, options.num_channels, bps, len);
  });
  return r;
}

}  // namespace spdl_torch::core
