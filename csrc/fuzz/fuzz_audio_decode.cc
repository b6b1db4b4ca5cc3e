// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: core::decode_audio_to_buffer over arbitrary bytes (native rate; 16 kHz mono; a window;
// int16; a late window, reached by a seek where the format allows), under a bounded output size, and the Ogg
// page reader that decides whether an Ogg input may be seeked. Built by `make fuzz`; not part of the extension (.cc suffix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/audio_decoder.h"
#include "core/detail/parse/ogg_pages.h"
#include "core/errors.h"

using namespace spdl_torch::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uint8_t kNothing = 0;
  const MediaSource source = MediaSource::from_memory(size ? data : &kNothing, size);
  const int64_t serial = spdl_torch::core::detail::ogg_last_page_serial(data, size);
  if (serial < -1 || serial > 0xffffffffLL) abort();
  (void)spdl_torch::core::detail::ogg_single_chain(source);
  for (int variant = 0; variant < 5; ++variant) {
    AudioOptions opt;
    opt.max_samples = int64_t(1) << 22;  // 16 MiB of float: far below libFuzzer's rss limit
    opt.strict = variant % 2 == 0;
    if (variant == 1) {
      opt.sample_rate = 16000;
      opt.num_channels = 1;
    } else if (variant == 2) {
      opt.start = 0.01;
      opt.stop = 0.05;
      opt.sample_rate = 8000;
      opt.num_channels = 2;
    } else if (variant == 3) {
      opt.type = SampleType::Int16;
    } else if (variant == 4) {
      opt.start = 0.6;
      opt.stop = 0.65;
    }
    try {
      const DecodedAudio d = decode_audio_to_buffer(source, opt);
      const size_t bps = sample_type_size(opt.type);
      if (d.samples.size() != size_t(d.result.num_channels) * size_t(d.result.written) * bps) abort();
      if (d.result.written * d.result.num_channels > opt.max_samples) abort();
      if (opt.num_channels > 0 && d.result.written > 0 && d.result.num_channels != opt.num_channels) abort();
    } catch (const DecodeError&) {
    } catch (const IOError&) {
    }
  }
  return 0;
}
