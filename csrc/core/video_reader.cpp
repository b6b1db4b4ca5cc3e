// SPDX-License-Identifier: BSD-3-Clause
// VideoReader (video_reader.h): opening, metadata, the exact index, and the seek-and-decode-forward loop.
#include "core/video_reader.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/frame_reader.h"
#include "core/detail/ffmpeg/video_convert.h"
#include "core/detail/ffmpeg/video_index.h"
#include "core/detail/ffmpeg/video_metadata.h"
#include "core/detail/pixels/pixel_limit.h"
#include "core/errors.h"
#include "core/seconds_text.h"

namespace spdl_torch::core {

SeekMode parse_seek_mode(const std::string& name) {
  if (name == "exact") return SeekMode::Exact;
  if (name == "approximate") return SeekMode::Approximate;
  throw InvalidArgument("expected seek_mode \"exact\" or \"approximate\", got \"" + name + "\"");
}

void VideoReadOptions::validate() const {
  if (threads < 0) throw InvalidArgument("expected threads >= 0 (0: FFmpeg picks), got " + std::to_string(threads));
  if (stream < -1) {
    throw InvalidArgument("expected stream >= 0, or -1 for FFmpeg's best video stream, got " + std::to_string(stream));
  }
}

using namespace detail;

namespace {

bool frame_flagged(const AVFrame* f) { return (f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags != 0; }

// The frame's timestamp, as the index's decode scan computed it (frame_timestamp), stored in frame->pts.
int64_t frame_pts(const AVFrame* f) { return f->pts; }

// A header that declares a picture FFmpeg refuses to open is over our own pixel limit first, when it is
// (the same error as every other oversized image); else FFmpeg's refusal, which names its limit.
std::unique_ptr<Demuxer> open_demuxer(const MediaSource& src, const VideoReadOptions& o) {
  try {
    return std::make_unique<Demuxer>(src);
  } catch (const PictureSizeError& e) {
    check_pixel_limit("video", e.width(), e.height(), o.max_pixels);
    throw;
  }
}

AVCodecContextPtr open_video_decoder(const Demuxer& d, int index, const VideoReadOptions& o) {
  const AVCodecParameters* par = d.stream(index)->codecpar;
  check_pixel_limit("video", par->width, par->height, o.max_pixels);
  return open_stream_decoder(d, index, o.threads);
}

}  // namespace

struct VideoReader::Impl {
  // The source and its demuxer: what is read, and from where.
  struct Demux {
    MediaSource source;
    std::unique_ptr<Demuxer> demuxer;  // replaced by a fresh one where seeking fails (reopen)
    int stream;
    double tb;                // seconds per pts unit
    bool seek_fails = false;  // a seek failed: start again from the beginning instead

    Demux(const MediaSource& src, const VideoReadOptions& wanted_options)
        : source(src),
          demuxer(open_demuxer(src, wanted_options)),
          stream(demuxer->find_stream(StreamKind::Video, wanted_options.stream)),
          tb(av_q2d(demuxer->stream(stream)->time_base)) {}
  };
  // What is known of the stream, each read once: the header's metadata and the exact index.
  struct Known {
    std::optional<VideoMetadata> meta;
    std::optional<FrameIndex> index;
    std::vector<double> times;  // index pts in seconds
    // Key frames of the index that the container marks but that do not decode cleanly on their own (the
    // decoder flags the first frame after a seek to them): seeks go to an earlier one.
    std::set<int64_t> unclean_keys;
  };
  // The decoder, and what it is told to skip or marks as damaged.
  struct Decoder {
    AVCodecContextPtr codec;
    FrameReader reader;
    bool skip_enabled = false;
    std::vector<int64_t> wanted_pts;   // sorted: the packets skip_frame must not drop
    bool damaged = false;              // since the last corrupt packet, no intact key frame yet
    std::vector<int64_t> damaged_pts;  // the packets sent while damaged, until their frame comes out

    Decoder(Demux& d, const VideoReadOptions& o)
        : codec(open_video_decoder(*d.demuxer, d.stream, o)), reader(*d.demuxer, d.stream, codec.get(), o.strict) {}
  };
  // Where the decoding is: the current frame, one read past its turn, and what came out since the last seek.
  struct Position {
    AVFramePtr frame{av_frame_alloc()};
    AVFramePtr held{av_frame_alloc()};  // a frame read past its turn (the next wanted one may be it)
    bool has_held = false;
    bool frame_damaged = false, held_damaged = false;  // `frame` / `held` came from a damaged packet
    bool at_start = true;                   // nothing read since the stream opened: decoding from here needs no seek
    int64_t last_pts = INT64_MIN;           // the last frame the decoder produced since the last seek
    int64_t produced = 0;                   // decode order: frames the decoder output since the start (-1: unknown)
    int64_t previous_end = AV_NOPTS_VALUE;  // the end of the last frame out (frame_timestamp)
  };
  // The wanted frames' colour conversion and rotation.
  struct Conversion {
    RgbConverter converter;
    std::vector<uint8_t> rgb, rotated;
  };
  // What the counters report (corrupt_packets, converted_frames, skipped_packets).
  struct Counts {
    int64_t corrupt = 0, converted = 0, skipped = 0;
  };

  VideoReadOptions opt;
  Demux demux;
  Known known;
  Decoder dec;
  Position pos;
  Conversion conv;
  Counts counts;

  Impl(const MediaSource& src, const VideoReadOptions& o) : opt(o), demux(src, o), dec(demux, o) {
    if (!pos.frame || !pos.held) throw std::bad_alloc();
    const bool frame_threads = dec.codec->active_thread_type & FF_THREAD_FRAME;
    dec.skip_enabled = opt.skip_nonref && !frame_threads;
    dec.reader.set_before_send([this](const AVPacket& p) {
      // A packet the demuxer found damaged (truncated) spoils its frame and, through references, every
      // frame until the next intact key frame: their timestamps are marked.
      if (p.flags & AV_PKT_FLAG_CORRUPT) {
        dec.damaged = true;
      } else if (p.flags & AV_PKT_FLAG_KEY) {
        dec.damaged = false;
      }
      if (dec.damaged && p.pts != AV_NOPTS_VALUE) dec.damaged_pts.push_back(p.pts);
      if (dec.skip_enabled && !(known.index && known.index->decoded)) {  // a decoded index: frames are not packets
        // Packets without pts (decode times only): their frames cannot be told apart, so none is skipped.
        const bool wanted = p.pts == AV_NOPTS_VALUE || dec.wanted_pts.empty() ||
                            std::binary_search(dec.wanted_pts.begin(), dec.wanted_pts.end(), p.pts);
        dec.codec->skip_frame = wanted ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
        if (!wanted) ++counts.skipped;
      }
    });
  }

  const FrameIndex& frame_index() {
    if (!known.index) {
      bool needs_decoding = false;
      {
        Demuxer scan(demux.source);  // a second demuxer: this one stays at the start of the stream
        known.index = scan_frame_index(scan, demux.stream, &needs_decoding);
      }
      if (needs_decoding) {
        Demuxer scan(demux.source);
        known.index = scan_decoded_frames(scan, demux.stream);
      }
      known.times.resize(known.index->pts.size());
      for (size_t i = 0; i < known.times.size(); ++i) known.times[i] = double(known.index->pts[i]) * demux.tb;
      if (known.index->pts.empty()) throw DecodeError("the video stream has no frames");
    }
    return *known.index;
  }

  VideoMetadata read_metadata() {
    VideoMetadata m = read_video_header(*demux.demuxer, demux.stream);
    if (m.num_frames < 0) {
      m.num_frames = frame_index().size();
      m.num_frames_counted = true;
    }
    return m;
  }

  int64_t approximate_count() {
    const VideoMetadata& m = metadata();
    if (m.num_frames >= 0) return m.num_frames;
    if (m.duration > 0 && m.average_fps > 0) return int64_t(std::llround(m.duration * m.average_fps));
    throw DecodeError("the stream's header has no frame count, duration or frame rate (use seek_mode=\"exact\")");
  }

  const VideoMetadata& metadata() {
    if (!known.meta) known.meta = read_metadata();
    return *known.meta;
  }

  int64_t count() { return opt.seek_mode == SeekMode::Exact ? frame_index().size() : approximate_count(); }

  // The next frame from the decoder (the held one first). False at the end of the stream.
  bool next_frame() {
    if (pos.has_held) {
      av_frame_unref(pos.frame.get());
      av_frame_move_ref(pos.frame.get(), pos.held.get());
      pos.has_held = false;
      pos.frame_damaged = pos.held_damaged;
      return true;
    }
    if (!dec.reader.next(pos.frame.get())) return false;
    pos.frame->pts = frame_timestamp(pos.frame.get(), pos.previous_end);
    // Each damaged packet marks one frame, the first out with its pts (a later frame of the same pts, in a
    // stream whose timestamps restart, is another packet's).
    const auto hit = std::find(dec.damaged_pts.begin(), dec.damaged_pts.end(), pos.frame->pts);
    pos.frame_damaged = hit != dec.damaged_pts.end();
    if (pos.frame_damaged) dec.damaged_pts.erase(hit);
    pos.previous_end =
        pos.frame->pts == AV_NOPTS_VALUE ? AV_NOPTS_VALUE : pos.frame->pts + frame_duration(pos.frame.get());
    pos.at_start = false;
    pos.last_pts = frame_pts(pos.frame.get());
    return true;
  }

  // Back to the start of the stream: a fresh demuxer (exact where a seek is not: a seek to the first
  // timestamp may land at a later frame of the same timestamp, or fail).
  void reopen() {
    auto fresh = std::make_unique<Demuxer>(demux.source);
    dec.reader.restart(*fresh);
    demux.demuxer = std::move(fresh);
    pos.produced = 0;
    pos.previous_end = AV_NOPTS_VALUE;
  }

  // Seeks to a key frame at or before `ts`; where the container cannot seek (Matroska without cues, a cut
  // file), from the start of the stream instead (earlier is always exact, only slower).
  void seek_to(int64_t ts) {
    bool seeked = false;
    if (!demux.seek_fails) {
      try {
        demux.demuxer->seek(demux.stream, ts);
        seeked = true;
      } catch (const DecodeError&) {
        demux.seek_fails = true;
      }
    }
    if (seeked) {
      dec.reader.restart();
    } else {
      reopen();
    }
    av_frame_unref(pos.held.get());
    pos.has_held = false;
    pos.at_start = false;
    pos.last_pts = INT64_MIN;
    pos.previous_end = AV_NOPTS_VALUE;
  }

  // Converts the current frame (and rotates it) and hands it to the sinks of every k that wants it.
  void emit(int64_t index_value, const std::vector<size_t>& ks, const FrameSink& sink) {
    const AVFrame* f = pos.frame.get();
    const bool flagged = frame_flagged(f) || pos.frame_damaged;
    if (flagged) {
      if (opt.strict) {
        throw DecodeError("corrupt video stream: the " + std::string(dec.codec->codec->name) +
                          " decoder flagged frame " + std::to_string(index_value) + " (pts " +
                          seconds_text(double(frame_pts(f)) * demux.tb) + ") as corrupt");
      }
      ++counts.corrupt;
    }
    check_pixel_limit("video", f->width, f->height, opt.max_pixels);
    const int64_t row = rgb_row_bytes(f->width);
    const size_t need = size_t(rgb_buffer_bytes(f->width, f->height));
    if (conv.rgb.size() < need) conv.rgb.resize(need);
    conv.converter.convert(f, conv.rgb.data(), row);
    ++counts.converted;
    VideoFrame out;
    out.rgb = conv.rgb.data();
    out.height = f->height;
    out.width = f->width;
    out.row_bytes = row;
    const int rot = opt.apply_rotation ? metadata().rotation : 0;
    if (rot != 0) {
      if (conv.rotated.size() < size_t(f->width * f->height * 3)) conv.rotated.resize(size_t(f->width * f->height * 3));
      rotate_rgb(conv.rgb.data(), f->height, f->width, row, rot, conv.rotated.data());
      out.rgb = conv.rotated.data();
      if (rot != 180) std::swap(out.height, out.width);
      out.row_bytes = out.width * 3;
    }
    out.pts = double(frame_pts(f)) * demux.tb;
    out.index = index_value;
    out.corrupt = flagged;
    for (size_t k : ks) sink(k, &out);
  }

  void missing(int64_t index_value, double seconds, const std::vector<size_t>& ks, const FrameSink& sink,
               const char* why) {
    if (opt.strict) {
      throw DecodeError("corrupt video stream: the " + std::string(dec.codec->codec->name) +
                        " decoder produced no frame " + std::to_string(index_value) + " (pts " + seconds_text(seconds) +
                        "): " + why);
    }
    ++counts.corrupt;
    for (size_t k : ks) sink(k, nullptr);
  }

  // Seeks to key frame k of the index (k < 0, or an index from decoding, whose guessed timestamps only
  // reproduce from the start: the start of the stream).
  void seek_to_key(const FrameIndex& ix, int64_t k) {
    if (k >= 0 && !ix.decoded) {
      seek_to(ix.key_seek[size_t(k)]);
    } else {
      seek_to(ix.pts.front() < 0 ? ix.pts.front() : 0);
    }
  }

  void decode_exact(const std::vector<std::pair<int64_t, std::vector<size_t>>>& groups, const FrameSink& sink) {
    const FrameIndex& ix = frame_index();
    for (const auto& [i, ks] : groups) {
      const int64_t target = ix.pts[size_t(i)];
      int64_t key = ix.key_of(i);
      while (key >= 0 && known.unclean_keys.count(key)) --key;  // -1: the start of the stream
      bool seek = false;
      if (pos.last_pts == INT64_MIN) {  // nothing decoded yet: from the start only when the frame's GOP is the first
        seek = !pos.has_held && (!pos.at_start || key > 0);
      } else if (target <= pos.last_pts && !(pos.has_held && frame_pts(pos.held.get()) <= target)) {
        seek = true;  // behind the decoder (a frame already passed)
      } else if (ix.key_at(pos.last_pts) < key) {
        seek = true;  // a key frame lies between: skip the frames before it
      }
      int64_t from = key;  // the key frame the seek aims at; one earlier after a seek that landed late
      if (seek) seek_to_key(ix, from);
      bool fresh = seek;  // the next frame is the first after a seek
      bool found = false;
      for (;;) {
        if (!next_frame()) {
          if (fresh && from >= 0) {  // the seek landed at the end: go earlier
            seek_to_key(ix, --from);
            continue;
          }
          break;
        }
        const int64_t p = frame_pts(pos.frame.get());
        if (fresh && p > target && from >= 0) {  // the demuxer landed past the frame (MPEG-PS): go earlier
          seek_to_key(ix, --from);
          continue;
        }
        if (fresh && from >= 0 && !ix.decoded && frame_flagged(pos.frame.get())) {
          // The key frame sought does not decode cleanly on its own (a recovery-point I frame whose prediction
          // reaches back, as in the corpus' cockatoo.mp4; the CLI's -ss shows the same errors): from an earlier
          // one, the start of the stream before the first. What stays flagged then is the file's own damage.
          known.unclean_keys.insert(from);
          do {
            --from;
          } while (from >= 0 && known.unclean_keys.count(from));
          seek_to_key(ix, from);
          continue;
        }
        fresh = false;
        if (p < target) continue;  // not wanted: never converted
        if (p == target) {
          emit(i, ks, sink);
          found = true;
        } else {  // past it: keep this frame for the next request
          av_frame_move_ref(pos.held.get(), pos.frame.get());
          pos.has_held = true;
          pos.held_damaged = pos.frame_damaged;
        }
        break;
      }
      if (!found) {
        if (!pos.has_held) {  // the end of the stream: the next request seeks
          pos.at_start = false;
          pos.last_pts = INT64_MIN;
        }
        missing(i, known.times[size_t(i)], ks, sink,
                pos.has_held ? "the decoder skipped it" : "the stream ended before it");
      }
    }
  }

  // Decode order (timestamps that restart): frame i is the i-th frame the decoder outputs from the start of
  // the stream, counted; a request behind the decoder starts again from the beginning.
  void decode_in_order(const std::vector<std::pair<int64_t, std::vector<size_t>>>& groups, const FrameSink& sink) {
    for (const auto& [i, ks] : groups) {
      if (pos.produced < 0 || pos.produced > i) reopen();
      bool found = false;
      while (next_frame()) {
        if (pos.produced++ < i) continue;  // not wanted: never converted
        emit(i, ks, sink);
        found = true;
        break;
      }
      if (!found) {
        pos.produced = -1;
        missing(i, known.times[size_t(i)], ks, sink, "the stream ended before it");
      }
    }
  }

  void decode_approximate(const std::vector<std::pair<int64_t, std::vector<size_t>>>& groups, const FrameSink& sink) {
    const VideoMetadata& m = metadata();
    AVStream* st = demux.demuxer->stream(demux.stream);
    const double fps = m.average_fps > 0 ? m.average_fps : 1.0;
    const int64_t start = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    const double half = 0.5 / fps / demux.tb;
    for (const auto& [i, ks] : groups) {
      const int64_t target = start + int64_t(std::llround(double(i) / fps / demux.tb));
      bool seek = false;
      if (pos.last_pts == INT64_MIN) {
        seek = !pos.has_held && (!pos.at_start || i > 0);
      } else if (double(target) + half <= double(pos.last_pts) && !pos.has_held) {
        seek = true;
      } else {
        const AVIndexEntry* e = avformat_index_get_entry_from_timestamp(st, target, AVSEEK_FLAG_BACKWARD);
        seek = e != nullptr && (e->flags & AVINDEX_KEYFRAME) && e->timestamp > pos.last_pts;
      }
      if (seek) seek_to(target);
      bool found = false;
      while (next_frame()) {
        if (double(frame_pts(pos.frame.get())) < double(target) - half) continue;
        emit(i, ks, sink);
        found = true;
        break;
      }
      if (!found) {
        pos.at_start = false;
        pos.last_pts = INT64_MIN;
        missing(i, double(target) * demux.tb, ks, sink, "the stream ended before it");
      }
    }
  }
};

VideoReader::VideoReader(const MediaSource& source, const VideoReadOptions& options) {
  options.validate();
  impl_ = std::make_unique<Impl>(source, options);
}

VideoReader::~VideoReader() = default;

const VideoMetadata& VideoReader::metadata() { return impl_->metadata(); }

int64_t VideoReader::num_frames() { return impl_->count(); }

std::optional<SecondsSpan> VideoReader::seconds_span(SeekMode mode) {
  Impl& s = *impl_;
  if (mode == SeekMode::Exact) {
    const FrameIndex& ix = s.frame_index();
    if (ix.decode_order) return std::nullopt;
    return SecondsSpan{s.known.times.front(), double(ix.end_pts) * s.demux.tb};
  }
  const VideoMetadata& m = s.metadata();
  const int64_t n = s.approximate_count();
  return SecondsSpan{m.start_time, m.start_time + double(n) / (m.average_fps > 0 ? m.average_fps : 1.0)};
}

std::vector<double> VideoReader::key_frame_times(SeekMode mode) {
  Impl& s = *impl_;
  if (mode == SeekMode::Exact) {
    const FrameIndex& ix = s.frame_index();
    if (!ix.decode_order) {
      std::vector<double> times;
      for (const int64_t k : ix.key_pts) {  // a key packet that outputs no frame (mov: discarded) is not one
        if (std::binary_search(ix.pts.begin(), ix.pts.end(), k)) times.push_back(double(k) * s.demux.tb);
      }
      return times;
    }
  }
  return s.metadata().key_frame_times;
}

int64_t VideoReader::index_at(double seconds) {
  Impl& s = *impl_;
  const std::optional<SecondsSpan> span = seconds_span(s.opt.seek_mode);
  if (!span) {
    const FrameIndex& ix = s.frame_index();
    throw DecodeError("the stream's timestamps do not increase (frame " + std::to_string(ix.restart) + " at " +
                      seconds_text(s.known.times[size_t(ix.restart)]) + " follows frame " +
                      std::to_string(ix.restart - 1) + " at " + seconds_text(s.known.times[size_t(ix.restart - 1)]) +
                      "), so a timestamp names no single frame: request the frames by index");
  }
  if (!(seconds >= span->begin && seconds < span->end)) {
    std::string why = "timestamp " + seconds_text(seconds) + " is outside the stream's [" + seconds_text(span->begin) +
                      ", " + seconds_text(span->end) + ") (video_metadata's begin_stream_seconds, end_stream_seconds)";
    const VideoMetadata& m = s.metadata();
    if (seconds < span->begin && seconds >= m.start_time) {
      why += ": no frame is displayed before the first one, at " + seconds_text(span->begin) +
             ", although the header's start (begin_stream_seconds_from_header) is " + seconds_text(m.start_time);
    }
    throw FrameRangeError(why);
  }
  if (s.opt.seek_mode == SeekMode::Exact) {
    return int64_t(std::upper_bound(s.known.times.begin(), s.known.times.end(), seconds) - s.known.times.begin()) - 1;
  }
  const VideoMetadata& m = s.metadata();
  const double fps = m.average_fps > 0 ? m.average_fps : 1.0;
  // The span's bounds are frames 0 and n: clamped against the rounding of (seconds - start) * fps.
  const double i = std::floor((seconds - m.start_time) * fps + 1e-9);
  return std::min(std::max(int64_t(i), int64_t(0)), s.approximate_count() - 1);
}

double VideoReader::frame_time(int64_t i) {
  Impl& s = *impl_;
  const int64_t n = s.count();
  if (i < 0 || i >= n) {
    throw FrameRangeError("frame index " + std::to_string(i) + " is out of range: the stream has " + std::to_string(n) +
                          " frames (valid indices 0.." + std::to_string(n - 1) + ")");
  }
  if (s.opt.seek_mode == SeekMode::Exact) return s.known.times[size_t(i)];
  const VideoMetadata& m = s.metadata();
  return m.start_time + double(i) / (m.average_fps > 0 ? m.average_fps : 1.0);
}

double VideoReader::end_time() {
  Impl& s = *impl_;
  if (s.opt.seek_mode == SeekMode::Exact) return double(s.frame_index().end_pts) * s.demux.tb;
  const VideoMetadata& m = s.metadata();
  return m.start_time + double(s.approximate_count()) / (m.average_fps > 0 ? m.average_fps : 1.0);
}

void VideoReader::decode(const std::vector<int64_t>& indices, const FrameSink& sink) {
  Impl& s = *impl_;
  const int64_t n = s.count();
  std::vector<std::pair<int64_t, std::vector<size_t>>> groups;
  std::vector<size_t> order(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= n) {
      throw FrameRangeError("frame index " + std::to_string(indices[k]) + " is out of range: the stream has " +
                            std::to_string(n) + " frames (valid indices 0.." + std::to_string(n - 1) + ")");
    }
    order[k] = k;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return indices[a] < indices[b]; });
  for (size_t k : order) {
    if (groups.empty() || groups.back().first != indices[k]) groups.push_back({indices[k], {}});
    groups.back().second.push_back(k);
  }
  s.dec.wanted_pts.clear();
  if (s.opt.seek_mode == SeekMode::Exact) {
    if (s.frame_index().decode_order) {
      s.decode_in_order(groups, sink);
      return;
    }
    for (const auto& g : groups) s.dec.wanted_pts.push_back(s.frame_index().pts[size_t(g.first)]);
    s.decode_exact(groups, sink);
  } else {  // approximate targets are not packet timestamps: wanted_pts stays empty, nothing is skipped
    s.decode_approximate(groups, sink);
  }
}

int64_t VideoReader::corrupt_packets() const { return impl_->counts.corrupt + impl_->dec.reader.corrupt_packets(); }
int64_t VideoReader::converted_frames() const { return impl_->counts.converted; }
int64_t VideoReader::skipped_packets() const { return impl_->counts.skipped; }

}  // namespace spdl_torch::core
