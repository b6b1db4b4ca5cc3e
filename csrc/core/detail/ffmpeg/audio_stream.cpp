// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_stream.h"

extern "C" {
#include <libavutil/mathematics.h>
}

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/detail/ffmpeg/audio_resampler.h"
#include "core/detail/ffmpeg/wav_frames.h"
#include "core/errors.h"
#include "core/seconds_text.h"

namespace spdl_torch::core::detail {
namespace {

std::string samples_seconds(int64_t samples, int rate) { return seconds_text(double(samples) / rate); }

// The input samples (at in_rate) to drop before a resampler starts, so that output `first` (at out_rate)
// still comes out as in the whole decode: the start is a multiple of in_rate / gcd (it maps to a whole
// output sample) at least a few filter lengths before `first`. Sets *out_base to the output index of the
// first output sample.
int64_t resampler_lead_in(int in_rate, int out_rate, int64_t first, int64_t* out_base) {
  *out_base = 0;
  if (first <= 0) return 0;
  if (in_rate == out_rate) {
    *out_base = first;
    return first;
  }
  const int64_t g = std::gcd(int64_t(in_rate), int64_t(out_rate));
  const int64_t step_in = in_rate / g;
  const int64_t step_out = out_rate / g;
  // libswresample's filter spans about filter_size (32) / cutoff input samples per output period.
  const int64_t margin = 8 * 32 * (int64_t(in_rate) / out_rate + 1) + 1024;
  const int64_t first_in = av_rescale_rnd(first, in_rate, out_rate, AV_ROUND_DOWN);
  if (first_in <= margin) return 0;
  const int64_t periods = (first_in - margin) / step_in;
  *out_base = periods * step_out;
  return periods * step_in;
}

class WindowWriter {
 public:
  WindowWriter(AudioSink& sink, int64_t first, int64_t end, SampleType type, int channels, int64_t max_samples)
      : sink_(sink), first_(first), end_(end), bps_(sample_type_size(type)), channels_(channels),
        max_per_channel_(max_samples / channels) {}

  // Samples [pos, pos + n) of the whole output, planar in `from`.
  void put(int64_t pos, int n, uint8_t* const* from) {
    const int64_t lo = std::max(pos, first_);
    const int64_t hi = end_ >= 0 ? std::min(pos + n, end_) : pos + n;
    if (hi <= lo) return;
    const int64_t count = hi - lo;
    if (written_ + count > max_per_channel_) {
      throw AudioOutputLimit("the output exceeds max_samples (" + std::to_string(max_per_channel_ * channels_) +
                        " samples over " + std::to_string(channels_) + " channels)");
    }
    const int64_t fit = sink_.reserve(written_, count);
    for (int c = 0; c < channels_; ++c) {
      std::memcpy(sink_.channel(c) + size_t(written_) * bps_, from[c] + size_t(lo - pos) * bps_, size_t(fit) * bps_);
    }
    written_ += fit;
    if (fit < count) full_ = true;
  }

  // Where the next samples of the whole output, from `pos`, may be converted straight into the sink: up to *n of
  // them (cut to the window's end), when they are the window's next ones and the sink has room; else nullptr
  // (convert into scratch memory, then put()).
  uint8_t* const* direct(int64_t pos, int* n) {
    if (end_ >= 0) *n = int(std::min<int64_t>(*n, end_ - pos));
    // libswresample may write a few samples past the count it returns (one, with int16 output when resampling):
    // the sink must have room for them too.
    constexpr int kSlack = 8;
    if (*n <= 0 || pos != first_ + written_ || written_ + *n + kSlack > max_per_channel_) return nullptr;
    if (sink_.reserve(written_, *n + kSlack) < *n + kSlack) return nullptr;
    pointers_.resize(size_t(channels_));
    for (int c = 0; c < channels_; ++c) pointers_[size_t(c)] = sink_.channel(c) + size_t(written_) * bps_;
    return pointers_.data();
  }
  // The samples a direct() conversion wrote.
  void commit(int n) { written_ += n; }

  bool done(int64_t pos) const { return full_ || (end_ >= 0 && pos >= end_); }
  int64_t written() const { return written_; }

 private:
  AudioSink& sink_;
  int64_t first_, end_;
  size_t bps_;
  int channels_;
  int64_t max_per_channel_;
  int64_t written_ = 0;
  bool full_ = false;
  std::vector<uint8_t*> pointers_;
};

// Planar scratch output of one convert call.
class Scratch {
 public:
  explicit Scratch(size_t bytes_per_sample) : bps_(bytes_per_sample) {}
  uint8_t* const* get(int channels, int samples) {
    const size_t need = size_t(std::max(samples, 1)) * bps_;
    if (planes_.size() != size_t(channels) || need > plane_bytes_) {
      plane_bytes_ = std::max(need, plane_bytes_ * 2);
      planes_.clear();
      pointers_.resize(size_t(channels));
      for (int c = 0; c < channels; ++c) {
        planes_.emplace_back(new uint8_t[plane_bytes_]);  // no zero fill: only written samples are read
        pointers_[size_t(c)] = planes_.back().get();
      }
    }
    return pointers_.data();
  }

 private:
  size_t bps_;
  size_t plane_bytes_ = 0;
  std::vector<std::unique_ptr<uint8_t[]>> planes_;
  std::vector<uint8_t*> pointers_;
};

// A frame of `samples` silent samples shaped like `like` (sample format, rate, channel layout).
AVFramePtr silent_frame(const AVFrame* like, int samples) {
  AVFramePtr f(av_frame_alloc());
  if (!f) throw std::bad_alloc();
  f->format = like->format;
  f->sample_rate = like->sample_rate;
  f->nb_samples = samples;
  if (av_channel_layout_copy(&f->ch_layout, &like->ch_layout) < 0) throw std::bad_alloc();
  const int err = av_frame_get_buffer(f.get(), 0);
  if (err < 0) throw_ffmpeg_error("cannot allocate a frame", err);
  av_samples_set_silence(f->extended_data, 0, samples, f->ch_layout.nb_channels, AVSampleFormat(f->format));
  return f;
}

// The whole output's length of a stream of `in_samples` input samples shaped like `silence`, resampled per
// `options` to out_rate, without converting its samples. libswresample's output count depends on how many
// samples it is given, not on their values, and a resampler started at an aligned input sample (as a
// window's lead-in starts, resampler_lead_in) gives from there on the whole decode's count; so the last
// few thousand input samples, given as silence, count the whole output exactly.
int64_t resampled_length(const AVFrame* silence, const AudioOptions& options, int out_rate, int64_t in_samples) {
  const int in_rate = silence->sample_rate;
  int64_t out_base = 0;
  const int64_t start = resampler_lead_in(in_rate, out_rate,
                                          av_rescale_rnd(in_samples, out_rate, in_rate, AV_ROUND_DOWN), &out_base);
  AudioResampler resampler(silence, out_rate, options.num_channels, options.type);
  Scratch scratch(sample_type_size(options.type));
  int64_t count = out_base;
  for (int64_t left = in_samples - start; left > 0;) {
    const int n = int(std::min<int64_t>(left, silence->nb_samples));
    const int cap = resampler.max_output(n);
    count += resampler.convert(silence, 0, n, scratch.get(resampler.out_channels(), cap), cap);
    left -= n;
  }
  for (;;) {
    const int cap = std::max(resampler.max_output(0), 1);
    const int n = resampler.flush(scratch.get(resampler.out_channels(), cap), cap);
    if (n <= 0) break;
    count += n;
  }
  return count;
}

}  // namespace

AudioInput::AudioInput(const MediaSource& source, bool native_wav) : source_(source) {
  if (native_wav) {
    auto wav = std::make_unique<WavReader>(source);
    if (wav->format().supported) {
      wav_ = std::move(wav);
      return;
    }
    // A decode (not the metadata reader) opens the demuxer its first bytes name, without probing, and reads no
    // packets for the stream information that the headers already give.
    demux_options_.format = demuxer_from_magic(wav->head(), wav->head_size());
    demux_options_.headers_only = true;
  }
  demuxer_ = std::make_unique<Demuxer>(source, demux_options_);
  stream_ = demuxer_->find_stream(StreamKind::Audio);
  codec_ = open_stream_decoder(*demuxer_, stream_, 1);
}

AudioMetadata AudioInput::metadata() const {
  if (!demuxer_) return AudioInput(source_, false).metadata();
  AudioMetadata m;
  const AVStream* st = demuxer_->stream(stream_);
  const AVCodecParameters* par = st->codecpar;
  m.stream_index = stream_;
  m.sample_rate = par->sample_rate;
  m.num_channels = par->ch_layout.nb_channels;
  char layout[128] = {0};
  if (av_channel_layout_describe(&par->ch_layout, layout, sizeof(layout)) > 0) m.channel_layout = layout;
  m.codec = avcodec_get_name(par->codec_id);
  const char* fmt = av_get_sample_fmt_name(codec_->sample_fmt);
  m.sample_format = fmt != nullptr ? fmt : "";
  m.format = demuxer_->format_name();
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
    m.duration_seconds = double(st->duration) * av_q2d(st->time_base);
  } else if (demuxer_->format()->duration != AV_NOPTS_VALUE && demuxer_->format()->duration > 0) {
    m.duration_seconds = double(demuxer_->format()->duration) / AV_TIME_BASE;
  }
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0 && par->sample_rate > 0) {
    m.num_frames = av_rescale_q(st->duration, st->time_base, AVRational{1, par->sample_rate});
  }
  m.bit_rate = par->bit_rate > 0 ? par->bit_rate : demuxer_->format()->bit_rate;
  return m;
}

int64_t AudioInput::stated_samples(int rate) const {
  if (wav_) {
    // The data chunk's length, cut to what the file holds.
    const WavFormat& f = wav_->format();
    return av_rescale(std::min(f.stated_samples(), f.samples()), rate, f.sample_rate);
  }
  const AVStream* st = demuxer_->stream(stream_);
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
    return av_rescale_q(st->duration, st->time_base, AVRational{1, rate});
  }
  const int64_t d = demuxer_->format()->duration;
  if (d != AV_NOPTS_VALUE && d > 0) return av_rescale_q(d, AVRational{1, AV_TIME_BASE}, AVRational{1, rate});
  return -1;
}

int AudioInput::stated_rate() const { return wav_ ? wav_->format().sample_rate : codec_->sample_rate; }

int AudioInput::stated_channels() const { return wav_ ? wav_->format().channels : codec_->ch_layout.nb_channels; }

std::unique_ptr<AudioFrames> AudioInput::frames(bool strict, AudioSeekMode mode) {
  if (wav_) return std::make_unique<WavAudioFrames>(*wav_);
  return std::make_unique<FfmpegAudioFrames>(source_, demux_options_, *demuxer_, stream_, codec_.get(), strict, mode);
}

namespace {

DecodeError corrupt_packet(const AudioFrames& frames) {
  return DecodeError("corrupt packet in the " + frames.format_name() +
                     " input (the file ends inside a packet: truncated?)" +
                     (ffmpeg_log().empty() ? "" : " (" + ffmpeg_log() + ")"));
}

AudioDecodeResult decode_pass(AudioInput& input, const AudioOptions& options, const OutputWindow& window,
                              AudioSink& sink, bool may_seek) {
  AudioDecodeResult result;
  std::unique_ptr<AudioFrames> frames = input.frames(options.strict, options.seek_mode);
  AVFramePtr frame(av_frame_alloc());
  if (!frame) throw std::bad_alloc();
  Scratch scratch(sample_type_size(options.type));
  std::unique_ptr<AudioResampler> resampler;
  std::unique_ptr<WindowWriter> writer;
  AVFramePtr silence;      // shaped like the first configuration's frames, when its lead-in skips input
  int64_t out_pos = 0;     // whole-output index of the resampler's next output sample
  int64_t in_pos = 0;      // input samples of the current resampler's configuration seen so far
  int64_t skip_in = 0;     // input samples of the first configuration not converted (before the window)
  int64_t decoded = 0;     // input samples decoded, all configurations (or the position reached, after a seek)
  bool seeked = false;
  bool converting = false;  // the first configuration's samples are being converted
  bool past_end = false;
  bool done = false;

  auto drain = [&] {
    for (;;) {
      const int cap = std::max(resampler->max_output(0), 1);
      uint8_t* const* out = scratch.get(resampler->out_channels(), cap);
      const int n = resampler->flush(out, cap);
      if (n <= 0) break;
      writer->put(out_pos, n, out);
      out_pos += n;
    }
  };

  int64_t position = -1;
  while (!done && frames->next(frame.get(), &position)) {
    if (options.strict && frames->flagged_packets() > 0) throw corrupt_packet(*frames);
    const int nb = frame->nb_samples;
    if (nb <= 0) continue;
    if (position >= 0) {
      // A frame whose whole-decode position the source knows (after a seek): it must be of the same
      // configuration, and follow on from the samples converted so far.
      if (!resampler || !resampler->matches(frame.get())) throw SeekUnusable{};
      if (converting && position != in_pos) throw SeekUnusable{};
      in_pos = decoded = position;
    }
    decoded += nb;
    if (!resampler) {
      resampler = std::make_unique<AudioResampler>(frame.get(), options.sample_rate, options.num_channels,
                                                   options.type);
      const int rate = resampler->out_rate();
      int64_t first = window.first, end = window.end;
      if (first < 0) {
        first = audio_sample_index(window.start, rate);
        end = window.stop < 0 ? -1 : audio_sample_index(window.stop, rate);
      }
      result.sample_rate = rate;
      result.num_channels = resampler->out_channels();
      result.first = first;
      sink.begin(resampler->out_channels(), rate);
      writer = std::make_unique<WindowWriter>(sink, first, end, options.type, resampler->out_channels(),
                                              options.max_samples);
      skip_in = resampler_lead_in(resampler->in_rate(), rate, first, &out_pos);
      if (skip_in > 0 && resampler->resamples()) silence = silent_frame(frame.get(), 4096);
      if (may_seek && skip_in > nb) {
        int64_t total = 0;
        const SeekResult sought = frames->seek(skip_in, nb, &total);
        if (sought == SeekResult::Seeked) {
          seeked = true;
          continue;  // the first frame is before the seek's target
        }
        if (sought == SeekResult::PastEnd) {
          in_pos = decoded = total;
          past_end = true;
          break;
        }
      }
    } else if (!resampler->matches(frame.get())) {
      if (seeked) throw SeekUnusable{};  // positions after a seek hold for one configuration only
      // The stream changed its format, rate or layout: drain the old configuration, continue with a new one
      // (as the CLI reconfigures its filter graph). The output rate and channels stay. An old configuration
      // that ended before the window's lead-in was never converted: its length at the output rate instead.
      if (skip_in > 0 && in_pos <= skip_in) {
        out_pos =
            resampler->resamples() ? resampled_length(silence.get(), options, resampler->out_rate(), in_pos) : in_pos;
      } else {
        drain();
      }
      resampler = std::make_unique<AudioResampler>(frame.get(), result.sample_rate, result.num_channels,
                                                   options.type);
      in_pos = 0;
      skip_in = 0;
    }
    const int64_t frame_start = in_pos;
    in_pos += nb;
    if (in_pos <= skip_in) continue;
    converting = true;
    const int offset = int(std::max<int64_t>(0, skip_in - frame_start));
    const int count = nb - offset;
    const int cap = resampler->max_output(count);
    int room = cap;
    if (uint8_t* const* direct = writer->direct(out_pos, &room)) {
      // Output past the window's end stays buffered in the resampler, never read.
      const int n = resampler->convert(frame.get(), offset, count, direct, room);
      writer->commit(n);
      out_pos += n;
    } else {
      uint8_t* const* out = scratch.get(resampler->out_channels(), cap);
      const int n = resampler->convert(frame.get(), offset, count, out, cap);
      writer->put(out_pos, n, out);
      out_pos += n;
    }
    done = writer->done(out_pos);
  }
  if (options.strict && frames->flagged_packets() > 0) throw corrupt_packet(*frames);
  if (!resampler) {  // no samples at all: the output keeps the stream's stated shape
    result.sample_rate = options.sample_rate > 0 ? options.sample_rate : input.stated_rate();
    result.num_channels = options.num_channels > 0 ? options.num_channels : input.stated_channels();
    sink.begin(result.num_channels, result.sample_rate);
    result.first = window.first >= 0 ? window.first : audio_sample_index(window.start, std::max(result.sample_rate, 1));
    result.reached_end = true;
    result.total = 0;
    result.corrupt_packets = frames->corrupt_packets();
    return result;
  }
  if (!done) {
    if (!past_end) drain();
    result.reached_end = true;
    result.total = out_pos;
    if (skip_in > 0 && in_pos <= skip_in) {
      // The stream ended before the lead-in did: nothing was converted. Its length at the output rate.
      result.total = resampler->resamples() ? resampled_length(silence.get(), options, resampler->out_rate(), in_pos)
                                            : in_pos;
    }
    const int64_t stated = frames->exact_length();
    if (options.strict && stated >= 0 && decoded < stated) {
      const int rate = input.stated_rate();
      throw DecodeError("truncated " + frames->codec_name() + " stream: the header states " + std::to_string(stated) +
                        " samples (" + samples_seconds(stated, rate) + "), the data holds " +
                        std::to_string(decoded) + " (" + samples_seconds(decoded, rate) + ")");
    }
  }
  result.written = writer->written();
  result.corrupt_packets = frames->corrupt_packets();
  return result;
}

}  // namespace

AudioDecodeResult decode_audio_stream(AudioInput& input, const AudioOptions& options, const OutputWindow& window,
                                      AudioSink& sink) {
  try {
    return decode_pass(input, options, window, sink, true);
  } catch (const SeekUnusable&) {
    AudioInput fresh(input.source());  // reopened: exactly the state of a decode from the start
    return decode_pass(fresh, options, window, sink, false);
  }
}

}  // namespace spdl_torch::core::detail
