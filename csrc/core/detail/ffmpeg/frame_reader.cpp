// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/frame_reader.h"

#include <new>
#include <string>

namespace spdl_torch::core::detail {

FrameReader::FrameReader(Demuxer& demuxer, int index, AVCodecContext* codec, bool strict)
    : demuxer_(&demuxer), index_(index), codec_(codec), strict_(strict), packet_(av_packet_alloc()) {
  if (!packet_) throw std::bad_alloc();
}

void FrameReader::rejected(const char* what, int err) {
  if (strict_) {
    throw_ffmpeg_error(std::string("corrupt ") + stream_kind_name(codec_->codec_type == AVMEDIA_TYPE_VIDEO
                                                                       ? StreamKind::Video
                                                                       : StreamKind::Audio) +
                           " stream: the " + codec_->codec->name + " decoder " + what,
                       err);
  }
  ++corrupt_;
}

bool FrameReader::next(AVFrame* frame) {
  for (;;) {
    av_frame_unref(frame);
    const int got = avcodec_receive_frame(codec_, frame);
    if (got == 0) return true;
    if (got == AVERROR_EOF) return false;
    if (got != AVERROR(EAGAIN)) {
      rejected("failed on a frame", got);
      // A draining decoder reports its buffered frames' errors one at a time; bounded against a decoder
      // that never reaches its end.
      if (draining_ && ++drain_errors_ < kMaxDrainErrors) continue;
    }
    if (draining_) return false;
    if (demuxer_->read(index_, packet_.get())) {
      if (filter_ && !filter_(packet_.get())) continue;
      if (before_send_) before_send_(*packet_);
      if (packet_->flags & AV_PKT_FLAG_CORRUPT) ++flagged_;
      const int sent = avcodec_send_packet(codec_, packet_.get());
      av_packet_unref(packet_.get());
      if (sent < 0 && sent != AVERROR(EAGAIN)) rejected("rejected a packet", sent);
    } else {
      draining_ = true;
      const int sent = avcodec_send_packet(codec_, nullptr);
      if (sent < 0 && sent != AVERROR_EOF) rejected("failed to drain", sent);
    }
  }
}

void FrameReader::restart() {
  avcodec_flush_buffers(codec_);
  draining_ = false;
  drain_errors_ = 0;
}

void FrameReader::restart(Demuxer& demuxer) {
  demuxer_ = &demuxer;
  restart();
}

}  // namespace spdl_torch::core::detail
