// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/wav_frames.h"

#include <algorithm>
#include <new>

namespace spdl_torch::core::detail {
namespace {

constexpr int64_t kFirstFrame = 64;                // samples
constexpr int64_t kFrameBytes = int64_t(1) << 16;  // output bytes of one frame after the first

AVSampleFormat sample_format(WavSampleFormat f) {
  switch (f) {
    case WavSampleFormat::U8: return AV_SAMPLE_FMT_U8;
    case WavSampleFormat::S16: return AV_SAMPLE_FMT_S16;
    case WavSampleFormat::S24:
    case WavSampleFormat::S32: return AV_SAMPLE_FMT_S32;
    case WavSampleFormat::F32: return AV_SAMPLE_FMT_FLT;
    case WavSampleFormat::F64: return AV_SAMPLE_FMT_DBL;
  }
  return AV_SAMPLE_FMT_NONE;
}

}  // namespace

WavAudioFrames::WavAudioFrames(WavReader& reader)
    : reader_(reader), sample_format_(sample_format(reader.format().format)) {
  const WavFormat& f = reader.format();
  // As FFmpeg's WAV header reader: the speaker mask's layout when it names as many channels, else an
  // unspecified order (which libswresample, as the ffmpeg CLI, takes as the default layout of that count).
  if (f.channel_mask == 0 || av_channel_layout_from_mask(&layout_.layout, f.channel_mask) < 0 ||
      layout_.layout.nb_channels != f.channels) {
    av_channel_layout_uninit(&layout_.layout);
    layout_.layout.order = AV_CHANNEL_ORDER_UNSPEC;
    layout_.layout.nb_channels = f.channels;
  }
}

bool WavAudioFrames::next(AVFrame* frame, int64_t* position) {
  av_frame_unref(frame);
  *position = -1;
  const WavFormat& f = reader_.format();
  const int64_t sample_bytes = int64_t(f.channels) * f.output_bytes();
  const int64_t want = first_ ? kFirstFrame : std::max<int64_t>(1, kFrameBytes / sample_bytes);
  buffer_.resize(size_t(want * sample_bytes));
  const int64_t n = reader_.read(next_, want, buffer_.data());
  if (n <= 0) return false;
  if (report_) *position = next_;
  report_ = false;
  first_ = false;
  next_ += n;
  frame->format = sample_format_;
  frame->sample_rate = f.sample_rate;
  frame->nb_samples = int(n);
  if (av_channel_layout_copy(&frame->ch_layout, &layout_.layout) < 0) throw std::bad_alloc();
  frame->data[0] = buffer_.data();
  frame->linesize[0] = int(n * sample_bytes);
  frame->extended_data = frame->data;
  return true;
}

SeekResult WavAudioFrames::seek(int64_t target, int first_samples, int64_t* total) {
  (void)first_samples;
  const int64_t samples = reader_.format().samples();
  if (target >= samples) {
    *total = samples;
    return SeekResult::PastEnd;
  }
  if (target <= next_) return SeekResult::NotSeeked;
  next_ = target;
  report_ = true;
  return SeekResult::Seeked;
}

int64_t WavAudioFrames::exact_length() const {
  const WavFormat& f = reader_.format();
  return f.stated_bytes >= 0 ? f.stated_bytes / f.block_align : -1;
}

}  // namespace spdl_torch::core::detail
