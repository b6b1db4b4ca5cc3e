// SPDX-License-Identifier: BSD-3-Clause
// Decodes the frames of one stream in the decoder's output order (presentation order for video): reads the
// stream's packets from a Demuxer, sends them to the decoder, receives frames, and drains the decoder at the
// end of the input. Shared by the video and audio decoders. Internal header.
#pragma once

#include <cstdint>
#include <functional>

#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"

namespace spdl_torch::core::detail {

class FrameReader {
 public:
  // `strict`: a packet or frame the decoder rejects raises DecodeError; otherwise it is counted
  // (corrupt_packets()) and decoding goes on with the next packet.
  FrameReader(Demuxer& demuxer, int index, AVCodecContext* codec, bool strict);

  // The next decoded frame into `frame` (unreferenced first). False once the decoder is drained.
  bool next(AVFrame* frame);

  // Call after Demuxer::seek: drops the decoder's buffered frames and restarts reading.
  void restart();
  // restart() reading from another demuxer of the same input (one opened afresh: at its start).
  void restart(Demuxer& demuxer);

  // Called with each packet just before it is sent to the decoder (the video reader sets the codec's
  // skip_frame per packet there). Optional.
  void set_before_send(std::function<void(const AVPacket&)> fn) { before_send_ = std::move(fn); }
  // Called with each packet read, before it is counted or sent: may rewrite it (timestamps, side data), and
  // returns false to drop it unsent (the audio seek by packet index). Optional.
  void set_packet_filter(std::function<bool(AVPacket*)> fn) { filter_ = std::move(fn); }

  int64_t corrupt_packets() const { return corrupt_; }
  // Packets the demuxer itself flagged corrupt (AV_PKT_FLAG_CORRUPT: e.g. a WAV's short last packet when the
  // file ends before its data chunk does); they are still sent to the decoder. Counted in both modes.
  int64_t flagged_packets() const { return flagged_; }
  AVCodecContext* codec() const { return codec_; }

 private:
  void rejected(const char* what, int err);

  Demuxer* demuxer_;
  int index_;
  AVCodecContext* codec_;
  bool strict_;
  AVPacketPtr packet_;
  static constexpr int kMaxDrainErrors = 1024;
  bool draining_ = false;
  int drain_errors_ = 0;
  int64_t corrupt_ = 0;
  std::function<void(const AVPacket&)> before_send_;
  std::function<bool(AVPacket*)> filter_;
  int64_t flagged_ = 0;
};

}  // namespace spdl_torch::core::detail
