// SPDX-License-Identifier: BSD-3-Clause
// A RIFF/WAVE (and RF64) reader for linear PCM and IEEE float samples, without FFmpeg: the chunks walked
// bounds-checked as FFmpeg's WAV demuxer walks them, the samples read straight from the file (or the caller's
// bytes) at any sample offset, in the sample formats FFmpeg's PCM decoders give (so that libswresample sees the
// same input as in an FFmpeg decode). Internal header.
//
// Read natively: WAVE_FORMAT_PCM (8-bit unsigned, 16, 24, 32-bit), WAVE_FORMAT_IEEE_FLOAT (32, 64-bit) and
// WAVE_FORMAT_EXTENSIBLE with those subformats, in RIFF or RF64 files; chunks before and after the data (LIST,
// fact, ...) and their pad bytes skipped; a data size of 0, 0xFFFFFFFF or, beyond the file, 0x7FFFF000 or more (a
// WAV written to a pipe) reads to the end of the file; a data chunk otherwise larger than the file is truncated
// (what the file holds is read, and the stated length kept: a strict decode reports it). Anything else
// is `supported = false` with the reason, and the caller decodes through FFmpeg: other codecs (A-law, ADPCM,
// MP3 in WAV, ...), RIFX, extra format bytes, a block alignment other than the samples' size, a second data
// chunk, and 16-bit PCM whose first 128 KiB hold an S/PDIF (IEC 61937) preamble or a DTS sync word (FFmpeg
// probes such data as AC-3 / DTS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/detail/io/byte_reader.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// The samples as FFmpeg's PCM decoders output them: U8, S16, S32 (24-bit samples shifted up 8 bits, as
// pcm_s24le gives them), F32, F64; interleaved, native (little-endian) byte order.
enum class WavSampleFormat { U8, S16, S24, S32, F32, F64 };

struct WavFormat {
  bool supported = false;
  std::string reason;                             // why not, when not supported
  WavSampleFormat format = WavSampleFormat::S16;  // as stored (S24: 3 bytes a sample)
  int channels = 0;
  int sample_rate = 0;
  int block_align = 0;             // bytes per sample frame (all channels)
  uint64_t channel_mask = 0;       // WAVE_FORMAT_EXTENSIBLE's speaker mask when it names `channels` speakers, else 0
  int64_t data_offset = 0;         // byte offset of the first sample
  int64_t data_bytes = 0;          // sample bytes in the input (the data chunk, cut to the file)
  int64_t stated_bytes = -1;       // the data chunk's stated size; -1: not stated (a streamed WAV: to the end)
  const char* codec_name() const;  // FFmpeg's name: "pcm_s16le", "pcm_f32le", ...
  int output_bytes() const;        // bytes per sample as output (S24 -> 4)
  int64_t samples() const { return block_align > 0 ? data_bytes / block_align : 0; }
  // The length the header states in samples (the data chunk's size; what the file holds when unstated).
  int64_t stated_samples() const {
    return block_align > 0 ? (stated_bytes >= 0 ? stated_bytes : data_bytes) / block_align : 0;
  }
};

// The format of the WAV in `input` (supported = false when it is not a WAV this reader takes).
WavFormat read_wav_format(ByteReader& input);

// A WAV input opened for reading samples.
class WavReader {
 public:
  // Opens `source` and reads its header. IOError when a path cannot be opened; the format may be unsupported
  // (format().supported), then nothing else may be called.
  explicit WavReader(const MediaSource& source);
  ~WavReader();
  WavReader(const WavReader&) = delete;
  WavReader& operator=(const WavReader&) = delete;

  const WavFormat& format() const { return format_; }
  // The input's first bytes (up to 16; fewer for a shorter input), read whatever the format.
  const uint8_t* head() const { return head_; }
  size_t head_size() const { return head_size_; }
  // Reads samples [first, first + count) (per channel) into `out` (count * channels * output_bytes() bytes),
  // in the output format; returns the samples read (fewer past the end).
  int64_t read(int64_t first, int64_t count, uint8_t* out);

 private:
  std::unique_ptr<ByteReader> input_;
  WavFormat format_;
  uint8_t head_[16] = {0};
  size_t head_size_ = 0;
  std::vector<uint8_t> packed_;  // S24 input before widening
};

}  // namespace spdl_torch::core::detail
