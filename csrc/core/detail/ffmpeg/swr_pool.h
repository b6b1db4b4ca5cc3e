// SPDX-License-Identifier: BSD-3-Clause
// Initialised libswresample contexts kept per thread and reused for the same configuration: swr_init on
// a context set up with the same rates and sample formats keeps its resampling filter bank (building one costs
// about 0.3 ms for 44.1 -> 16 kHz, more than decoding a short clip) and resets every other piece of state, so a
// reused context converts exactly as a new one. At most kSwrPoolSize contexts a thread. Internal header.
#pragma once

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

#include <cstddef>

#include "core/detail/ffmpeg/ffmpeg_utils.h"

namespace spdl_torch::core::detail {

constexpr size_t kSwrPoolSize = 4;

// A context converting `in` to `out` (libswresample's default options), initialised (swr_init): one this thread
// kept for that configuration, else a new one. DecodeError when libswresample refuses the configuration.
SwrContextPtr acquire_swr(const AVChannelLayout& out, AVSampleFormat out_format, int out_rate,
                          const AVChannelLayout& in, AVSampleFormat in_format, int in_rate);

// Gives a context back for a later acquire_swr of the same configuration (the oldest kept one is freed beyond
// kSwrPoolSize).
void release_swr(SwrContextPtr context, const AVChannelLayout& out, AVSampleFormat out_format, int out_rate,
                 const AVChannelLayout& in, AVSampleFormat in_format, int in_rate);

}  // namespace spdl_torch::core::detail
