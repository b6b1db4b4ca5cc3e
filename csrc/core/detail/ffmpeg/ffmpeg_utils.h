// SPDX-License-Identifier: BSD-3-Clause
// FFmpeg resource ownership and error text, shared by the FFmpeg-based decoders. Internal header.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <string>

namespace spdl_torch::core::detail {

struct AVCodecContextDeleter {
  void operator()(AVCodecContext* p) const { avcodec_free_context(&p); }
};
struct AVPacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct AVFrameDeleter {
  void operator()(AVFrame* p) const { av_frame_free(&p); }
};
struct SwsContextDeleter {
  void operator()(SwsContext* p) const { sws_freeContext(p); }
};

struct AVFormatInputDeleter {  // a context opened by avformat_open_input
  void operator()(AVFormatContext* p) const { avformat_close_input(&p); }
};
struct SwrContextDeleter {
  void operator()(SwrContext* p) const { swr_free(&p); }
};

using AVCodecContextPtr = std::unique_ptr<AVCodecContext, AVCodecContextDeleter>;
using AVPacketPtr = std::unique_ptr<AVPacket, AVPacketDeleter>;
using AVFramePtr = std::unique_ptr<AVFrame, AVFrameDeleter>;
using SwsContextPtr = std::unique_ptr<SwsContext, SwsContextDeleter>;
using AVFormatInputPtr = std::unique_ptr<AVFormatContext, AVFormatInputDeleter>;
using SwrContextPtr = std::unique_ptr<SwrContext, SwrContextDeleter>;

// An AVChannelLayout owned: uninitialised (its custom map freed) at the end of its scope.
struct OwnedChannelLayout {
  AVChannelLayout layout{};
  OwnedChannelLayout() = default;
  ~OwnedChannelLayout() { av_channel_layout_uninit(&layout); }
  OwnedChannelLayout(const OwnedChannelLayout&) = delete;
  OwnedChannelLayout& operator=(const OwnedChannelLayout&) = delete;
};

// Drops a packet's or frame's references at the end of a scope (the object itself stays allocated).
struct PacketUnref {
  AVPacket* packet;
  ~PacketUnref() { av_packet_unref(packet); }
};

// Routes FFmpeg's log to a per-thread buffer instead of stderr (installed once, process-wide), so that
// a decode error can carry the decoder's own explanation and the library prints nothing.
void install_ffmpeg_log_capture();
// Clears this thread's captured error-level log lines.
void clear_ffmpeg_log();
// This thread's error-level log lines since the last clear_ffmpeg_log(), joined by "; " (may be empty).
std::string ffmpeg_log();

// Whether `id` is one of FFmpeg's raw PCM codecs (pcm_s16le, pcm_f32le, ...).
bool is_pcm_codec(AVCodecID id);

// av_strerror's text for an FFmpeg error code.
std::string ffmpeg_error_string(int errnum);

// Throws core::DecodeError "<what>: <av_strerror text>" plus this thread's captured FFmpeg log, if any.
[[noreturn]] void throw_ffmpeg_error(const std::string& what, int errnum);

}  // namespace spdl_torch::core::detail
