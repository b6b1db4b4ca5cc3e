// SPDX-License-Identifier: BSD-3-Clause
// The demux layer shared by the video and audio decoders: opens a MediaSource with libavformat (a path, or
// the caller's bytes through MemoryIO), selects a stream, reads its packets and seeks. Every FFmpeg object is
// owned from allocation. Errors are core::DecodeError "<what>: <FFmpeg's reason>" (the caller names the
// source: the op layer prefixes its path or sample index), or core::IOError when a path cannot be opened.
// Internal header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/detail/ffmpeg/avio_memory.h"
#include "core/detail/ffmpeg/ffmpeg_utils.h"
#include "core/errors.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// The input's header declares a picture FFmpeg's size check (av_image_check_size) refuses, so the demuxer
// cannot open it; the declared size, for a caller to compare with its own pixel limit first.
class PictureSizeError : public DecodeError {
 public:
  PictureSizeError(const std::string& message, int64_t width, int64_t height)
      : DecodeError(message), width_(width), height_(height) {}
  int64_t width() const { return width_; }
  int64_t height() const { return height_; }

 private:
  int64_t width_, height_;
};

enum class StreamKind { Video, Audio };

const char* stream_kind_name(StreamKind kind);  // "video", "audio"

// How a Demuxer opens its input.
struct DemuxOptions {
  // The demuxer to use (av_find_input_format's name), skipping format probing; nullptr: probe.
  const char* format = nullptr;
  // Read no packets for the stream information when the headers state what a decoder needs (the stream's rate
  // and channels, and its length): FLAC, Ogg, MP4. The packets the demuxer returns are the same.
  bool headers_only = false;
};

// The demuxer FFmpeg's probe picks for an input starting with `head` (n bytes) where the start is unambiguous
// ("fLaC": flac, "OggS": ogg, an ISO BMFF "ftyp" box: mov), else nullptr.
const char* demuxer_from_magic(const uint8_t* head, size_t n);

class Demuxer {
 public:
  // Opens the input and reads its stream information (avformat_find_stream_info). PictureSizeError when
  // the header declares a picture FFmpeg's size check refuses.
  explicit Demuxer(const MediaSource& source, const DemuxOptions& options = {});
  Demuxer(const Demuxer&) = delete;
  Demuxer& operator=(const Demuxer&) = delete;

  // The index of the stream of that kind FFmpeg picks as best (or `wanted`, checked, when >= 0).
  // DecodeError "no video stream" / "no audio stream" when there is none.
  int find_stream(StreamKind kind, int wanted = -1) const;

  AVFormatContext* format() const { return format_.get(); }
  AVStream* stream(int index) const { return format_->streams[index]; }
  const char* format_name() const { return format_->iformat->name; }

  // Reads the next packet of stream `index` into `packet` (unreferenced first; packets of other streams
  // are dropped). Returns false at the end of the input. DecodeError when the read fails.
  bool read(int index, AVPacket* packet);

  // Seeks stream `index` so that reading resumes at a key frame at or before `timestamp` (in the stream's
  // time base). DecodeError when the container cannot seek.
  void seek(int index, int64_t timestamp);
  // Repositions the input at byte `pos` (a packet position from an earlier read of this input): reading
  // resumes there, the demuxer resynchronising on its own. DecodeError when the format cannot seek by bytes.
  void seek_bytes(int index, int64_t pos);

 private:
  std::unique_ptr<MemoryIO> io_;  // declared before format_: the format context closes first
  AVFormatInputPtr format_;
};

// A decoder for stream `index`, opened with `threads` decoder threads (0: FFmpeg picks; 1: none).
// DecodeError when the codec is unknown to this FFmpeg build or refuses to open.
AVCodecContextPtr open_stream_decoder(const Demuxer& demuxer, int index, int threads);

}  // namespace spdl_torch::core::detail
