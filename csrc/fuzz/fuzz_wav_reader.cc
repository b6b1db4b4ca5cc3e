// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the native RIFF/WAVE reader (core/detail/wav/wav_reader.h) over arbitrary bytes: its format
// (the data range must lie inside the input, the sample format agree with the block alignment), reads at
// arbitrary offsets (never more samples than asked or than the data holds), and decode_audio_to_buffer over the
// same bytes (the whole file and a late window: the native path, or FFmpeg's for what it leaves). Built by
// `make fuzz`; not part of the extension (.cc suffix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/audio_decoder.h"
#include "core/detail/wav/wav_reader.h"
#include "core/errors.h"

using namespace spdl_torch::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uint8_t kNothing = 0;
  const MediaSource source = MediaSource::from_memory(size ? data : &kNothing, size);
  detail::WavReader reader(source);
  const detail::WavFormat& f = reader.format();
  if (f.supported) {
    if (f.data_offset < 0 || f.data_bytes < 0 || f.data_offset + f.data_bytes > int64_t(size)) abort();
    if (f.channels < 1 || f.channels > 64 || f.sample_rate < 1 || f.block_align < 1) abort();
    if (f.block_align % f.channels != 0) abort();
    const int64_t samples = f.samples();
    std::vector<uint8_t> out(size_t(256) * size_t(f.channels) * size_t(f.output_bytes()));
    for (const int64_t first : {int64_t(0), samples / 2, samples - 1, samples, samples + 7}) {
      const int64_t n = reader.read(first, 256, out.data());
      if (n < 0 || n > 256 || (first >= samples && n != 0) || (first < samples && n > samples - first)) abort();
    }
  }
  for (int variant = 0; variant < 3; ++variant) {
    AudioOptions opt;
    opt.max_samples = int64_t(1) << 22;
    opt.strict = variant != 1;
    if (variant == 1) {
      opt.sample_rate = 16000;
      opt.num_channels = 1;
    } else if (variant == 2) {
      opt.start = 0.02;
      opt.stop = 0.03;
    }
    try {
      const DecodedAudio d = decode_audio_to_buffer(source, opt);
      if (d.samples.size() != size_t(d.result.num_channels) * size_t(d.result.written) * sample_type_size(opt.type)) {
        abort();
      }
    } catch (const DecodeError&) {
    } catch (const IOError&) {
    }
  }
  return 0;
}
