// SPDX-License-Identifier: BSD-3-Clause
// decode_audio / decode_audio_file: one audio stream (or a window of it) -> (Tensor[C, N] float32 or int16, the
// output rate in Hz as an int64 0-dim tensor);
// audio_metadata / audio_metadata_file: the stream's metadata without decoding. The *_file variants have no
// tensor input, so they sit under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/audio_decoder.h"
#include "core/seconds_text.h"
#include "ops/audio_options.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

std::string seconds(int64_t samples, int rate) { return core::seconds_text(double(samples) / double(rate)); }

using Decoded = std::tuple<at::Tensor, at::Tensor>;

Decoded decode(const core::MediaSource& source, const char* op, int64_t sample_rate, int64_t num_channels,
               double start_seconds, c10::optional<double> stop_seconds, c10::optional<at::ScalarType> dtype,
               bool strict, int64_t max_samples, c10::string_view seek_mode) {
  core::AudioOptions opt;
  TORCH_CHECK_VALUE(sample_rate >= 0 && sample_rate <= core::kMaxAudioSampleRate, op,
                    ": expected sample_rate in [1, ", core::kMaxAudioSampleRate, "] or 0, got ", sample_rate);
  TORCH_CHECK_VALUE(num_channels >= 0 && num_channels <= core::kMaxAudioChannels, op,
                    ": expected num_channels in [1, ", core::kMaxAudioChannels, "] or 0, got ", num_channels);
  opt.sample_rate = int(sample_rate);
  opt.num_channels = int(num_channels);
  opt.start = start_seconds;
  opt.stop = stop_seconds.has_value() ? *stop_seconds : -1.0;
  TORCH_CHECK_VALUE(!stop_seconds.has_value() || *stop_seconds >= 0, op, ": expected stop_seconds >= 0 or None, got ",
                    *stop_seconds);
  opt.type = audio_sample_type(dtype, op);
  opt.strict = strict;
  opt.max_samples = max_samples;
  translate_core_errors(op, [&] {
    opt.seek_mode = core::parse_audio_seek_mode(std::string(seek_mode));
    opt.validate();
  });
  auto decoded = std::make_unique<core::DecodedAudio>(
      translate_core_errors(op, [&] { return core::decode_audio_to_buffer(source, opt); }));
  const core::AudioDecodeResult& r = decoded->result;
  // A window that starts past the end (of a stream that has samples) is an IndexError.
  TORCH_CHECK_INDEX(!(r.reached_end && r.first > 0 && r.first >= r.total), op, ": the window starts at sample ",
                    r.first, " (", seconds(r.first, r.sample_rate), " at ", r.sample_rate,
                    " Hz) but the audio has only ", r.total, " samples (", seconds(r.total, r.sample_rate), ")");
  const int64_t channels = r.num_channels;
  const int64_t n = r.written;
  void* data = decoded->samples.data();
  const at::Tensor rate = at::scalar_tensor(int64_t(r.sample_rate), at::TensorOptions().dtype(at::kLong));
  if (channels * n == 0) {
    return {at::empty({channels, n}, at::TensorOptions().dtype(audio_scalar_type(opt.type))), rate};
  }
  auto* owner = decoded.release();
  return {at::from_blob(
              data, {channels, n}, [owner](void*) { delete owner; },
              at::TensorOptions().dtype(audio_scalar_type(opt.type))),
          rate};
}

Decoded decode_audio(const at::Tensor& data, int64_t sample_rate, int64_t num_channels, double start_seconds,
                     c10::optional<double> stop_seconds, c10::optional<at::ScalarType> dtype, bool strict,
                     int64_t max_samples, c10::string_view seek_mode) {
  check_encoded_bytes(data, "decode_audio");
  const at::Tensor bytes = data.contiguous();
  return decode(audio_bytes_source(bytes), "decode_audio", sample_rate, num_channels, start_seconds, stop_seconds,
                dtype, strict, max_samples, seek_mode);
}

Decoded decode_audio_file(c10::string_view path, int64_t sample_rate, int64_t num_channels, double start_seconds,
                          c10::optional<double> stop_seconds, c10::optional<at::ScalarType> dtype, bool strict,
                          int64_t max_samples, c10::string_view seek_mode) {
  return decode(core::MediaSource::from_path(std::string(path)), "decode_audio_file", sample_rate, num_channels,
                start_seconds, stop_seconds, dtype, strict, max_samples, seek_mode);
}

using Metadata = std::tuple<std::vector<int64_t>, std::vector<std::string>, double>;

Metadata metadata(const core::MediaSource& source, const char* op) {
  const core::AudioMetadata m = translate_core_errors(op, [&] { return core::read_audio_metadata(source); });
  return {{m.sample_rate, m.num_channels, m.num_frames, m.bit_rate, m.stream_index},
          {m.codec, m.sample_format, m.channel_layout, m.format},
          m.duration_seconds};
}

Metadata audio_metadata(const at::Tensor& data) {
  check_encoded_bytes(data, "audio_metadata");
  const at::Tensor bytes = data.contiguous();
  return metadata(audio_bytes_source(bytes), "audio_metadata");
}

Metadata audio_metadata_file(c10::string_view path) {
  return metadata(core::MediaSource::from_path(std::string(path)), "audio_metadata_file");
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) {
  m.impl("decode_audio", &decode_audio);
  m.impl("audio_metadata", &audio_metadata);
}
TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) {
  m.impl("decode_audio_file", &decode_audio_file);
  m.impl("audio_metadata_file", &audio_metadata_file);
}

}  // namespace spdl_torch::ops
