// SPDX-License-Identifier: BSD-3-Clause
// Audio batches: many files (or windows of them) decoded, resampled and mixed to one rate and channel count,
// each written into its slot of one padded [B, C, N] batch on the shared native pool, largest input first.
// Plain C++, no torch headers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/audio_types.h"
#include "core/media_source.h"
#include "core/thread_pool.h"

namespace spdl_torch::core {

struct AudioBatchOptions {
  int sample_rate = 0;    // output rate (Hz), required
  int num_channels = 0;   // output channels, required
  SampleType type = SampleType::Float32;
  double duration = -1;   // > 0: windows of round(duration * sample_rate) samples; else whole files
  bool random_crop = false;  // with duration: each window's start drawn from its sample's seed
  bool strict = true;
  AudioSeekMode seek_mode = AudioSeekMode::Approximate;  // as AudioOptions::seek_mode
  // The whole batch's output: B x channels x N samples (padding included), B the number of items.
  int64_t max_samples = kDefaultMaxAudioSamples;

  void validate() const;                 // InvalidArgument
  int64_t window_samples() const;        // round(duration * sample_rate); -1 for whole files
};

struct AudioBatchItem {
  MediaSource source;
  double start = 0.0;  // window start in seconds (duration > 0 without random_crop)
  int64_t seed = 0;    // random_crop: the sample's SplitMix64 seed
};

// Slot i of the batch: channel c's samples at data + i * stride_b + c * stride_c (in elements).
struct AudioSlots {
  uint8_t* data = nullptr;
  int64_t stride_b = 0;
  int64_t stride_c = 0;
  int64_t length = 0;  // N: samples per slot
};

struct AudioBatchResult {
  std::vector<int64_t> lengths;      // samples written into each slot (the rest is zero padding)
  std::vector<int64_t> offsets;      // each slot's first sample index in its file's whole output
  std::vector<std::string> errors;   // "" for the samples that decoded
  std::vector<int> io_errno;         // an input that could not be opened (IOError): its errno; else -1
};

// Decodes every item. `allocate(N)` is called once, from the calling thread, for the batch's slots: before
// any decoding for fixed windows (N = window_samples()), after decoding for whole files (N = the longest).
// on_last_started (may be empty) runs once the last item has started (the batch turn). A failing sample's
// slot is zero-filled and its error recorded (the caller raises it when strict); InternalError propagates.
// Size: B x channels x N over options.max_samples is an InvalidArgument, raised before allocating: for
// windows before decoding; for whole files as soon as a file decodes to more than max_samples / B samples
// (its channels included), naming the first such item (path or "sample i").
// Random crop: the window starts at randint(L - N + 1) of SplitMix64(seed), L the stream's stated length at
// the output rate (0 when unstated or shorter than N), so it depends only on the seed and the header; when
// the stream ends before that window does (a truncated file, a header that overstates its length), the
// start is drawn again from the same seed with L the decoded length, so a crop is only cut short when the
// whole stream is shorter than N.
AudioBatchResult decode_audio_batch(const std::vector<AudioBatchItem>& items, const AudioBatchOptions& options,
                                    const std::function<AudioSlots(int64_t)>& allocate, ThreadPool& pool,
                                    const std::function<void()>& on_last_started);

}  // namespace spdl_torch::core
