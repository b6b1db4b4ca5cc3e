// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_frames.h"

extern "C" {
#include <libavutil/intreadwrite.h>
#include <libavutil/mathematics.h>
}

#include <algorithm>
#include <new>
#include <string>

#include "core/detail/ffmpeg/audio_index_cache.h"
#include "core/detail/io/byte_reader.h"
#include "core/detail/parse/flac_frames.h"
#include "core/errors.h"

namespace spdl_torch::core::detail {
namespace {

// Decoders whose stated length is exact, so a stream that ends early is truncated (strict: DecodeError).
bool exact_length_codec(AVCodecID id) { return id == AV_CODEC_ID_FLAC || is_pcm_codec(id); }

// Position of a frame with timestamp `pts` (stream time base), in input samples from the first output sample.
int64_t frame_position(int64_t pts, int64_t origin, AVRational time_base, int rate) {
  return av_rescale_q_rnd(pts - origin, time_base, AVRational{1, rate},
                          AVRounding(AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX));
}

}  // namespace

FfmpegAudioFrames::FfmpegAudioFrames(const MediaSource& source, const DemuxOptions& demux_options, Demuxer& demuxer,
                                     int stream, AVCodecContext* codec, bool strict, AudioSeekMode mode)
    : source_(source),
      demux_options_(demux_options),
      demuxer_(demuxer),
      stream_(stream),
      codec_(codec),
      mode_(mode),
      reader_(demuxer, stream, codec, strict) {}

bool FfmpegAudioFrames::next(AVFrame* frame, int64_t* position) {
  *position = -1;
  for (;;) {
    if (!reader_.next(frame)) {
      if (check_landing_ || byte_landing_) throw SeekUnusable{};  // the seek found no frame
      // Fewer packets than the index lists: not the file it was built from.
      if (index_ && next_packet_ != index_->packets()) throw SeekUnusable{};
      return false;
    }
    if (frame->nb_samples <= 0) continue;
    if (first_) {
      first_ = false;
      origin_ = frame->pts;
      first_rate_ = frame->sample_rate;
      return true;
    }
    if (byte_landing_) {
      byte_landing_ = false;  // the frame found by the FLAC search: its position is its header's
      *position = landing_target_;
      return true;
    }
    if (check_landing_) {
      // A timestamp seek must land on a timed frame at or before its target (on it, packet-aligned).
      check_landing_ = false;
      if (frame->pts == AV_NOPTS_VALUE || origin_ == AV_NOPTS_VALUE || frame->sample_rate <= 0) throw SeekUnusable{};
      const int64_t pos = frame_position(frame->pts, origin_, demuxer_.stream(stream_)->time_base, frame->sample_rate);
      if (pos < 0 || pos > landing_target_ || (aligned_ && pos != landing_target_)) throw SeekUnusable{};
      *position = pos;
      return true;
    }
    if (index_) {
      // The frame's packet (its pts is the packet's number, set by accept_indexed).
      const int64_t m = frame->pts;
      if (m < first_packet_ || m >= next_packet_) throw SeekUnusable{};
      const int64_t at = index_->start[size_t(m)];
      if (m == first_packet_) {
        // The first packet after the seek: a decoder without its history may output another length (Vorbis:
        // nothing); its samples are not the whole decode's, and must end before the window's packet.
        if (at + frame->nb_samples > index_->start[size_t(exact_packet_)]) throw SeekUnusable{};
      } else {
        // Every later frame, pre-roll included, comes in order with the length the index counted for it.
        if (m != next_frame_ || frame->nb_samples != index_->start[size_t(m) + 1] - at) throw SeekUnusable{};
        next_frame_ = next_output(m + 1);
      }
      *position = at;
      return true;
    }
    return true;
  }
}

SeekResult FfmpegAudioFrames::seek(int64_t target, int first_samples, int64_t* total) {
  (void)total;
  const SeekPolicy policy = audio_seek_policy(demuxer_, stream_, mode_, first_rate_);
  if (policy.method == SeekMethod::FlacFrames) {
    const SeekResult r = seek_flac(target, first_samples);
    if (r != SeekResult::NotSeeked) return r;
  }
  if (policy.method == SeekMethod::Timestamp || policy.method == SeekMethod::FlacFrames) {
    aligned_ = policy.packet_aligned;
    return seek_by_timestamp(target - policy.preroll_samples, first_samples);
  }
  if (policy.method == SeekMethod::PacketIndex) {
    const int rate = first_rate_;
    if (rate <= 0 || target <= first_samples + rate / 2) return SeekResult::NotSeeked;  // decoding beats seeking
    index_ = cached_packet_index(source_, demux_options_, stream_, rate);
    if (!index_->unusable.empty() || index_->packets() < 2 || index_->total() <= 0) {
      index_.reset();
      return SeekResult::NotSeeked;
    }
    // Past the end: decode the last packets instead, which tells the stream's length exactly.
    const int64_t last = index_->total() - 1;
    const int64_t k = index_->packet_at(std::min(target, last));
    const int64_t at = std::min(target, last);
    int64_t j = k, bytes = 0;
    while (j > 0 && (k - j < policy.preroll_packets || at - index_->start[size_t(j)] < policy.preroll_samples ||
                     bytes < policy.preroll_bytes)) {
      --j;
      bytes += index_->size[size_t(j)];
    }
    j = index_->first_at_position(j);
    if (j <= 0 || j < index_->settled) {
      index_.reset();
      return SeekResult::NotSeeked;
    }
    try {
      demuxer_.seek_bytes(stream_, index_->pos[size_t(j)]);
    } catch (const DecodeError&) {
      throw SeekUnusable{};
    }
    reader_.restart();
    reader_.set_packet_filter([this](AVPacket* p) { return accept_indexed(p); });
    first_packet_ = next_packet_ = j;
    exact_packet_ = k;
    next_frame_ = next_output(j + 1);
    return SeekResult::Seeked;
  }
  return SeekResult::NotSeeked;
}

SeekResult FfmpegAudioFrames::seek_flac(int64_t target, int first_samples) {
  const int rate = first_rate_;
  if (rate <= 0 || target <= first_samples + rate / 2) return SeekResult::NotSeeked;
  const AVCodecParameters* par = demuxer_.stream(stream_)->codecpar;
  FlacStreamInfo info;
  if (!parse_flac_streaminfo(par->extradata, size_t(std::max(par->extradata_size, 0)), &info) ||
      info.sample_rate != rate) {
    return SeekResult::NotSeeked;
  }
  std::unique_ptr<ByteReader> bytes = open_bytes(source_);
  if (!bytes) return SeekResult::NotSeeked;
  // The whole decode's position 0 is the first frame's first sample.
  const int64_t start = flac_audio_offset(*bytes);
  uint8_t head[32];
  FlacFrame first;
  if (start < 0 || !parse_flac_frame_header(head, bytes->read(start, head, sizeof(head)), info, &first)) {
    return SeekResult::NotSeeked;
  }
  int64_t pos = 0, sample = 0;
  if (!locate_flac_frame(*bytes, info, start, first.first_sample + target, &pos, &sample)) return SeekResult::NotSeeked;
  try {
    demuxer_.seek_bytes(stream_, pos);
  } catch (const DecodeError&) {
    throw SeekUnusable{};
  }
  reader_.restart();
  // The first packet read must be that frame; the frames from it on follow one another.
  reader_.set_packet_filter([this, pos](AVPacket* p) {
    if (flac_landed_) return true;
    if (p->pos >= 0 && p->pos < pos) return false;  // held from before the seek
    if (p->pos != pos) throw SeekUnusable{};
    flac_landed_ = true;
    return true;
  });
  landing_target_ = sample - first.first_sample;
  byte_landing_ = true;
  return SeekResult::Seeked;
}

SeekResult FfmpegAudioFrames::seek_by_timestamp(int64_t target, int first_samples) {
  const int rate = first_rate_;
  if (origin_ == AV_NOPTS_VALUE || rate <= 0 || first_samples <= 0) return SeekResult::NotSeeked;
  if (aligned_) target -= target % first_samples;
  if (target <= first_samples + rate / 2) return SeekResult::NotSeeked;  // nearer than this, decoding beats seeking
  const AVRational tb = demuxer_.stream(stream_)->time_base;
  const int64_t ts = origin_ + av_rescale_q(target, AVRational{1, rate}, tb);
  try {
    demuxer_.seek(stream_, ts);
  } catch (const DecodeError&) {
    throw SeekUnusable{};  // e.g. past the end of a truncated file: the decode from the start tells
  }
  reader_.restart();
  check_landing_ = true;
  landing_target_ = target;
  return SeekResult::Seeked;
}

int64_t FfmpegAudioFrames::next_output(int64_t from) const {
  while (from < index_->packets() && index_->start[size_t(from) + 1] == index_->start[size_t(from)]) ++from;
  return from;
}

bool FfmpegAudioFrames::accept_indexed(AVPacket* p) {
  const PacketIndex& index = *index_;
  // Packets the demuxer still held from before the seek.
  if (next_packet_ == first_packet_ && p->pos >= 0 && p->pos < index.pos[size_t(first_packet_)]) return false;
  const int64_t i = next_packet_;
  if (i >= index.packets() || p->pos != index.pos[size_t(i)] || p->size != index.size[size_t(i)]) {
    throw SeekUnusable{};
  }
  // The side data and flags a read from the start gave this packet (a demuxer computes some of them from
  // timestamps, which a byte seek does not restore); the packet's number as its timestamps.
  av_packet_free_side_data(p);
  const PacketTrim trim = index.trim(i);
  if (trim.has_side_data) {
    uint8_t* side = av_packet_new_side_data(p, AV_PKT_DATA_SKIP_SAMPLES, 10);
    if (side == nullptr) throw std::bad_alloc();
    AV_WL32(side, trim.skip);
    AV_WL32(side + 4, trim.discard);
    side[8] = side[9] = 0;
  }
  p->flags = (p->flags & ~AV_PKT_FLAG_DISCARD) | (trim.discard_flag ? AV_PKT_FLAG_DISCARD : 0);
  p->pts = p->dts = i;
  ++next_packet_;
  return true;
}

int64_t FfmpegAudioFrames::exact_length() const {
  const AVStream* st = demuxer_.stream(stream_);
  const AVCodecParameters* par = st->codecpar;
  if (!exact_length_codec(par->codec_id) || st->duration == AV_NOPTS_VALUE || st->duration <= 0 ||
      par->sample_rate <= 0) {
    return -1;
  }
  return av_rescale_q(st->duration, st->time_base, AVRational{1, par->sample_rate});
}

std::string FfmpegAudioFrames::codec_name() const {
  return avcodec_get_name(demuxer_.stream(stream_)->codecpar->codec_id);
}

}  // namespace spdl_torch::core::detail
