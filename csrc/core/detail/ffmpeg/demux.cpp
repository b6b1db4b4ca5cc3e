// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/demux.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace spdl_torch::core::detail {

namespace {

// Whether every stream is PCM audio whose header states its rate and channel count: such streams have no
// codec header or parser for avformat_find_stream_info to read packets for.
bool header_is_complete(const AVFormatContext* f) {
  if (f->nb_streams == 0) return false;
  for (unsigned i = 0; i < f->nb_streams; ++i) {
    const AVCodecParameters* par = f->streams[i]->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_AUDIO || !is_pcm_codec(par->codec_id) ||
        par->sample_rate <= 0 || par->ch_layout.nb_channels <= 0) {
      return false;
    }
  }
  return true;
}

// Whether every stream is audio whose header states its rate, channels and length, in a container whose header
// is read whole before the first packet (FLAC's STREAMINFO, Ogg's header packets and last granule, MP4's sample
// tables): the stream information needs no packets there either.
bool header_states_audio(const AVFormatContext* f) {
  const std::string name = f->iformat->name;
  if (name != "flac" && name != "ogg" && name.rfind("mov,", 0) != 0) return false;
  if (f->nb_streams == 0) return false;
  for (unsigned i = 0; i < f->nb_streams; ++i) {
    const AVStream* st = f->streams[i];
    const AVCodecParameters* par = st->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_AUDIO || par->codec_id == AV_CODEC_ID_NONE || par->sample_rate <= 0 ||
        par->ch_layout.nb_channels <= 0 || st->duration == AV_NOPTS_VALUE || st->duration <= 0) {
      return false;
    }
  }
  return true;
}

// The picture size FFmpeg's image size check refused while the input was opened, from its log line
// ("Picture size WxH is invalid"); false when it logged none. The demuxers return that check's error code
// unchanged or not at all (the y4m demuxer adds its frame header's length to it: EINVAL becomes EBUSY,
// "Device or resource busy"), so the log is what tells the reason.
bool refused_picture_size(const std::string& log, int64_t* width, int64_t* height) {
  const char* const kLine = "Picture size ";
  for (size_t at = log.find(kLine); at != std::string::npos; at = log.find(kLine, at + 1)) {
    uint64_t w = 0, h = 0;
    int used = 0;
    if (std::sscanf(log.c_str() + at, "Picture size %" SCNu64 "x%" SCNu64 " is invalid%n", &w, &h, &used) == 2 &&
        used > 0) {
      *width = int64_t(w);
      *height = int64_t(h);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* demuxer_from_magic(const uint8_t* head, size_t n) {
  if (n >= 4 && std::memcmp(head, "fLaC", 4) == 0) return "flac";
  if (n >= 4 && std::memcmp(head, "OggS", 4) == 0) return "ogg";
  if (n >= 12 && std::memcmp(head + 4, "ftyp", 4) == 0) return "mov";
  return nullptr;
}

const char* stream_kind_name(StreamKind kind) { return kind == StreamKind::Video ? "video" : "audio"; }

Demuxer::Demuxer(const MediaSource& source, const DemuxOptions& options) {
  install_ffmpeg_log_capture();
  clear_ffmpeg_log();
  AVFormatContext* raw = avformat_alloc_context();
  if (raw == nullptr) throw std::bad_alloc();
  if (source.in_memory()) {
    if (source.size == 0) {
      avformat_free_context(raw);
      throw DecodeError("empty input (0 bytes)");
    }
    io_ = std::make_unique<MemoryIO>(source.data, source.size);
    raw->pb = io_->context();
    raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  const AVInputFormat* format = options.format != nullptr ? av_find_input_format(options.format) : nullptr;
  // avformat_open_input frees the context itself when it fails.
  const int err = avformat_open_input(&raw, source.in_memory() ? "" : source.path.c_str(), format, nullptr);
  if (err < 0) {
    if (!source.in_memory() && (err == AVERROR(ENOENT) || err == AVERROR(EACCES) || err == AVERROR(EISDIR))) {
      throw IOError("cannot open " + source.path + ": " + ffmpeg_error_string(err), AVUNERROR(err));
    }
    int64_t width = 0, height = 0;
    if (refused_picture_size(ffmpeg_log(), &width, &height)) {
      const std::string size = std::to_string(width) + "x" + std::to_string(height);
      throw PictureSizeError("cannot open the input: its header declares a picture of " + size + " = " +
                                 std::to_string(uint64_t(width) * uint64_t(height)) +
                                 " pixels, over the largest picture FFmpeg allocates (av_image_check_size: about "
                                 "268 million pixels)",
                             width, height);
    }
    throw_ffmpeg_error("cannot open the input", err);
  }
  format_.reset(raw);
  if (header_is_complete(format_.get()) || (options.headers_only && header_states_audio(format_.get()))) {
    // Nothing left to learn by reading packets: probing them costs a WAV about 3 ms, ten times the rest
    // of opening it (measured on the corpus' 8 kHz WAVs).
    format_->probesize = 32;
    format_->max_analyze_duration = 1;
  }
  const int info = avformat_find_stream_info(format_.get(), nullptr);
  if (info < 0) throw_ffmpeg_error(std::string("cannot read the stream information of the ") + format_name() +
                                       " input", info);
}

int Demuxer::find_stream(StreamKind kind, int wanted) const {
  const AVMediaType type = kind == StreamKind::Video ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO;
  if (wanted >= 0) {
    if (wanted >= static_cast<int>(format_->nb_streams) || stream(wanted)->codecpar->codec_type != type) {
      throw DecodeError(std::string("stream ") + std::to_string(wanted) + " is not a " + stream_kind_name(kind) +
                        " stream of this " + format_name() + " input");
    }
    return wanted;
  }
  const int index = av_find_best_stream(format_.get(), type, -1, -1, nullptr, 0);
  if (index < 0) {
    throw DecodeError(std::string("no ") + stream_kind_name(kind) + " stream in this " + format_name() + " input");
  }
  return index;
}

bool Demuxer::read(int index, AVPacket* packet) {
  for (;;) {
    av_packet_unref(packet);
    const int err = av_read_frame(format_.get(), packet);
    if (err == AVERROR_EOF) return false;
    if (err < 0) throw_ffmpeg_error(std::string("cannot read a packet of the ") + format_name() + " input", err);
    if (packet->stream_index == index) return true;
  }
}

void Demuxer::seek(int index, int64_t timestamp) {
  const int err = avformat_seek_file(format_.get(), index, INT64_MIN, timestamp, timestamp, AVSEEK_FLAG_BACKWARD);
  if (err < 0) throw_ffmpeg_error(std::string("cannot seek in the ") + format_name() + " input", err);
}

void Demuxer::seek_bytes(int index, int64_t pos) {
  const int err = av_seek_frame(format_.get(), index, pos, AVSEEK_FLAG_BYTE);
  if (err < 0) throw_ffmpeg_error(std::string("cannot seek by bytes in the ") + format_name() + " input", err);
}

AVCodecContextPtr open_stream_decoder(const Demuxer& demuxer, int index, int threads) {
  const AVCodecParameters* par = demuxer.stream(index)->codecpar;
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (codec == nullptr) {
    throw DecodeError(std::string("no decoder for the ") + avcodec_get_name(par->codec_id) +
                      " codec in this FFmpeg build");
  }
  AVCodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) throw std::bad_alloc();
  int err = avcodec_parameters_to_context(ctx.get(), par);
  if (err < 0) throw_ffmpeg_error(std::string("cannot configure the ") + codec->name + " decoder", err);
  ctx->pkt_timebase = demuxer.stream(index)->time_base;
  ctx->thread_count = threads;
  err = avcodec_open2(ctx.get(), codec, nullptr);
  if (err < 0) throw_ffmpeg_error(std::string("cannot open the ") + codec->name + " decoder", err);
  return ctx;
}

}  // namespace spdl_torch::core::detail
