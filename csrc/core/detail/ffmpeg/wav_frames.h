// SPDX-License-Identifier: BSD-3-Clause
// The native WAV reader's samples (detail/wav/wav_reader.h) as the frames the audio decode loop reads
// (audio_frames.h): the sample formats and channel layout FFmpeg's PCM decoders give, so that libswresample
// converts them exactly as in an FFmpeg decode; a seek is arithmetic. Internal header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/detail/ffmpeg/audio_frames.h"
#include "core/detail/wav/wav_reader.h"

namespace spdl_torch::core::detail {

class WavAudioFrames : public AudioFrames {
 public:
  explicit WavAudioFrames(WavReader& reader);
  bool next(AVFrame* frame, int64_t* position) override;
  SeekResult seek(int64_t target, int first_samples, int64_t* total) override;
  int64_t corrupt_packets() const override { return 0; }
  int64_t flagged_packets() const override { return 0; }
  int64_t exact_length() const override;
  std::string codec_name() const override { return reader_.format().codec_name(); }
  std::string format_name() const override { return "wav"; }

 private:
  WavReader& reader_;
  OwnedChannelLayout layout_;
  AVSampleFormat sample_format_;
  std::vector<uint8_t> buffer_;
  int64_t next_ = 0;     // the next sample to read
  bool first_ = true;    // the first frame is short: it only configures the decode loop before a seek
  bool report_ = false;  // the next frame's position is reported (after a seek)
};

}  // namespace spdl_torch::core::detail
