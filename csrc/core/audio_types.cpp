// SPDX-License-Identifier: BSD-3-Clause
#include "core/audio_types.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/seconds_text.h"

namespace spdl_torch::core {

size_t sample_type_size(SampleType type) { return type == SampleType::Float32 ? 4 : 2; }

int64_t audio_sample_index(double seconds, int rate) {
  return static_cast<int64_t>(std::floor(seconds * double(rate) + 0.5));
}

AudioSeekMode parse_audio_seek_mode(const std::string& name) {
  if (name == "exact") return AudioSeekMode::Exact;
  if (name == "approximate") return AudioSeekMode::Approximate;
  throw InvalidArgument("expected seek_mode 'exact' or 'approximate', got '" + name + "'");
}

void AudioOptions::validate() const {
  if (sample_rate < 0 || sample_rate > kMaxAudioSampleRate) {
    throw InvalidArgument("expected sample_rate in [1, " + std::to_string(kMaxAudioSampleRate) +
                          "] Hz (or 0: the source's), got " + std::to_string(sample_rate));
  }
  if (num_channels < 0 || num_channels > kMaxAudioChannels) {
    throw InvalidArgument("expected num_channels in [1, " + std::to_string(kMaxAudioChannels) +
                          "] (or 0: the source's), got " + std::to_string(num_channels));
  }
  if (!std::isfinite(start) || start < 0) {
    throw InvalidArgument("expected a finite start >= 0 seconds, got " + seconds_text(start));
  }
  if (std::isnan(stop) || (stop >= 0 && stop < start) || std::isinf(stop)) {
    throw InvalidArgument("expected stop >= start (" + seconds_text(start) + ") or None, got " +
                          seconds_text(stop));
  }
  if (start > 1e9 || stop > 1e9) throw InvalidArgument("expected start and stop below 1e9 seconds");
  if (max_samples < 1) throw InvalidArgument("expected max_samples >= 1, got " + std::to_string(max_samples));
}

}  // namespace spdl_torch::core
