// VideoReader (video_reader.h): opening, metadata, the exact index, and the seek-and-decode-forward loop.
#include "core/video_reader.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <optional>
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

}  // namespace

struct VideoReader::Impl {
  MediaSource source;
  VideoReadOptions opt;
  std::unique_ptr<Demuxer> demuxer;  // replaced by a fresh one where seeking fails (reopen)
  int stream;
  AVCodecContextPtr codec;
  FrameReader reader;
  double tb;  // seconds per pts unit
  std::optional<VideoMetadata> meta;
  std::optional<FrameIndex> index;
  std::vector<double> times;  // index pts in seconds
  RgbConverter converter;
  std::vector<uint8_t> rgb, rotated;
  AVFramePtr frame{av_frame_alloc()};
  AVFramePtr held{av_frame_alloc()};  // a frame read past its turn (the next wanted one may be it)
  bool has_held = false;
  bool at_start = true;          // nothing read since the stream opened: decoding from here needs no seek
  int64_t last_pts = INT64_MIN;  // the last frame the decoder produced since the last seek
  int64_t produced = 0;          // decode order: frames the decoder output since the start (-1: unknown)
  bool seek_fails = false;       // a seek failed: start again from the beginning instead
  int64_t previous_end = AV_NOPTS_VALUE;  // its end (frame_timestamp)
  int64_t corrupt = 0, converted = 0, skipped = 0;
  std::vector<int64_t> wanted_pts;  // sorted: the packets skip_frame must not drop
  bool skip_enabled = false;
  bool damaged = false;              // since the last corrupt packet, no intact key frame yet
  std::vector<int64_t> damaged_pts;  // the packets sent while damaged, until their frame comes out
  bool frame_damaged = false, held_damaged = false;  // `frame` / `held` came from such a packet

  Impl(const MediaSource& src, const VideoReadOptions& o)
      : source(src),
        opt(o),
        demuxer(open_demuxer(src, o)),
        stream(demuxer->find_stream(StreamKind::Video, o.stream)),
        codec(open_video_decoder(*demuxer, stream, o)),
        reader(*demuxer, stream, codec.get(), o.strict),
        tb(av_q2d(demuxer->stream(stream)->time_base)) {
    if (!frame || !held) throw std::bad_alloc();
    const bool frame_threads = codec->active_thread_type & FF_THREAD_FRAME;
    skip_enabled = opt.skip_nonref && !frame_threads;
    reader.set_before_send([this](const AVPacket& p) {
      // A packet the demuxer found damaged (truncated) spoils its frame and, through references, every
      // frame until the next intact key frame: their timestamps are marked.
      if (p.flags & AV_PKT_FLAG_CORRUPT) {
        damaged = true;
      } else if (p.flags & AV_PKT_FLAG_KEY) {
        damaged = false;
      }
      if (damaged && p.pts != AV_NOPTS_VALUE) damaged_pts.push_back(p.pts);
      if (skip_enabled && !(index && index->decoded)) {  // a decoded index: frames are not packets
        // Packets without pts (decode times only): their frames cannot be told apart, so none is skipped.
        const bool wanted = p.pts == AV_NOPTS_VALUE || wanted_pts.empty() ||
                            std::binary_search(wanted_pts.begin(), wanted_pts.end(), p.pts);
        codec->skip_frame = wanted ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
        if (!wanted) ++skipped;
      }
    });
  }

  // A header that declares a picture FFmpeg refuses to open is over our own pixel limit first, when it is
  // (the same error as every other oversized image); else FFmpeg's refusal, which names its limit.
  static std::unique_ptr<Demuxer> open_demuxer(const MediaSource& src, const VideoReadOptions& o) {
    try {
      return std::make_unique<Demuxer>(src);
    } catch (const PictureSizeError& e) {
      check_pixel_limit("video", e.width(), e.height(), o.max_pixels);
      throw;
    }
  }

  static AVCodecContextPtr open_video_decoder(const Demuxer& d, int index, const VideoReadOptions& o) {
    const AVCodecParameters* par = d.stream(index)->codecpar;
    check_pixel_limit("video", par->width, par->height, o.max_pixels);
    return open_stream_decoder(d, index, o.threads);
  }

  const FrameIndex& frame_index() {
    if (!index) {
      bool needs_decoding = false;
      {
        Demuxer scan(source);  // a second demuxer: this one stays at the start of the stream
        index = scan_frame_index(scan, stream, &needs_decoding);
      }
      if (needs_decoding) {
        Demuxer scan(source);
        index = scan_decoded_frames(scan, stream);
      }
      times.resize(index->pts.size());
      for (size_t i = 0; i < times.size(); ++i) times[i] = double(index->pts[i]) * tb;
      if (index->pts.empty()) throw DecodeError("the video stream has no frames");
    }
    return *index;
  }

  VideoMetadata read_metadata() {
    VideoMetadata m = read_video_header(*demuxer, stream);
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
    if (!meta) meta = read_metadata();
    return *meta;
  }

  int64_t count() { return opt.seek_mode == SeekMode::Exact ? frame_index().size() : approximate_count(); }

  // The next frame from the decoder (the held one first). False at the end of the stream.
  bool next_frame() {
    if (has_held) {
      av_frame_unref(frame.get());
      av_frame_move_ref(frame.get(), held.get());
      has_held = false;
      frame_damaged = held_damaged;
      return true;
    }
    if (!reader.next(frame.get())) return false;
    frame->pts = frame_timestamp(frame.get(), previous_end);
    // Each damaged packet marks one frame, the first out with its pts (a later frame of the same pts, in a
    // stream whose timestamps restart, is another packet's).
    const auto hit = std::find(damaged_pts.begin(), damaged_pts.end(), frame->pts);
    frame_damaged = hit != damaged_pts.end();
    if (frame_damaged) damaged_pts.erase(hit);
    previous_end = frame->pts == AV_NOPTS_VALUE ? AV_NOPTS_VALUE : frame->pts + frame_duration(frame.get());
    at_start = false;
    last_pts = frame_pts(frame.get());
    return true;
  }

  // Back to the start of the stream: a fresh demuxer (exact where a seek is not: a seek to the first
  // timestamp may land at a later frame of the same timestamp, or fail).
  void reopen() {
    auto fresh = std::make_unique<Demuxer>(source);
    reader.restart(*fresh);
    demuxer = std::move(fresh);
    produced = 0;
    previous_end = AV_NOPTS_VALUE;
  }

  // Seeks to a key frame at or before `ts`; where the container cannot seek (Matroska without cues, a cut
  // file), from the start of the stream instead (earlier is always exact, only slower).
  void seek_to(int64_t ts) {
    bool seeked = false;
    if (!seek_fails) {
      try {
        demuxer->seek(stream, ts);
        seeked = true;
      } catch (const DecodeError&) {
        seek_fails = true;
      }
    }
    if (seeked) {
      reader.restart();
    } else {
      reopen();
    }
    av_frame_unref(held.get());
    has_held = false;
    at_start = false;
    last_pts = INT64_MIN;
    previous_end = AV_NOPTS_VALUE;
  }

  // Converts the current frame (and rotates it) and hands it to the sinks of every k that wants it.
  void emit(int64_t index_value, const std::vector<size_t>& ks, const FrameSink& sink) {
    const AVFrame* f = frame.get();
    const bool flagged = frame_flagged(f) || frame_damaged;
    if (flagged) {
      if (opt.strict) {
        throw DecodeError("corrupt video stream: the " + std::string(codec->codec->name) + " decoder flagged frame " +
                          std::to_string(index_value) + " (pts " + seconds_text(double(frame_pts(f)) * tb) +
                          ") as corrupt");
      }
      ++corrupt;
    }
    check_pixel_limit("video", f->width, f->height, opt.max_pixels);
    const int64_t row = rgb_row_bytes(f->width);
    const size_t need = size_t(rgb_buffer_bytes(f->width, f->height));
    if (rgb.size() < need) rgb.resize(need);
    converter.convert(f, rgb.data(), row);
    ++converted;
    VideoFrame out;
    out.rgb = rgb.data();
    out.height = f->height;
    out.width = f->width;
    out.row_bytes = row;
    const int rot = opt.apply_rotation ? metadata().rotation : 0;
    if (rot != 0) {
      if (rotated.size() < size_t(f->width * f->height * 3)) rotated.resize(size_t(f->width * f->height * 3));
      rotate_rgb(rgb.data(), f->height, f->width, row, rot, rotated.data());
      out.rgb = rotated.data();
      if (rot != 180) std::swap(out.height, out.width);
      out.row_bytes = out.width * 3;
    }
    out.pts = double(frame_pts(f)) * tb;
    out.index = index_value;
    out.corrupt = flagged;
    for (size_t k : ks) sink(k, &out);
  }

  void missing(int64_t index_value, double seconds, const std::vector<size_t>& ks, const FrameSink& sink,
               const char* why) {
    if (opt.strict) {
      throw DecodeError("corrupt video stream: the " + std::string(codec->codec->name) + " decoder produced no frame " +
                        std::to_string(index_value) + " (pts " + seconds_text(seconds) + "): " + why);
    }
    ++corrupt;
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
      const int64_t key = ix.key_of(i);
      bool seek = false;
      if (last_pts == INT64_MIN) {  // nothing decoded yet: from the start only when the frame's GOP is the first
        seek = !has_held && (!at_start || key > 0);
      } else if (target <= last_pts && !(has_held && frame_pts(held.get()) <= target)) {
        seek = true;  // behind the decoder (a frame already passed)
      } else if (ix.key_at(last_pts) < key) {
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
        const int64_t p = frame_pts(frame.get());
        if (fresh && p > target && from >= 0) {  // the demuxer landed past the frame (MPEG-PS): go earlier
          seek_to_key(ix, --from);
          continue;
        }
        fresh = false;
        if (p < target) continue;  // not wanted: never converted
        if (p == target) {
          emit(i, ks, sink);
          found = true;
        } else {  // past it: keep this frame for the next request
          av_frame_move_ref(held.get(), frame.get());
          has_held = true;
          held_damaged = frame_damaged;
        }
        break;
      }
      if (!found) {
        if (!has_held) {  // the end of the stream: the next request seeks
          at_start = false;
          last_pts = INT64_MIN;
        }
        missing(i, times[size_t(i)], ks, sink, has_held ? "the decoder skipped it" : "the stream ended before it");
      }
    }
  }

  // Decode order (timestamps that restart): frame i is the i-th frame the decoder outputs from the start of
  // the stream, counted; a request behind the decoder starts again from the beginning.
  void decode_in_order(const std::vector<std::pair<int64_t, std::vector<size_t>>>& groups, const FrameSink& sink) {
    for (const auto& [i, ks] : groups) {
      if (produced < 0 || produced > i) reopen();
      bool found = false;
      while (next_frame()) {
        if (produced++ < i) continue;  // not wanted: never converted
        emit(i, ks, sink);
        found = true;
        break;
      }
      if (!found) {
        produced = -1;
        missing(i, times[size_t(i)], ks, sink, "the stream ended before it");
      }
    }
  }

  void decode_approximate(const std::vector<std::pair<int64_t, std::vector<size_t>>>& groups, const FrameSink& sink) {
    const VideoMetadata& m = metadata();
    AVStream* st = demuxer->stream(stream);
    const double fps = m.average_fps > 0 ? m.average_fps : 1.0;
    const int64_t start = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    const double half = 0.5 / fps / tb;
    for (const auto& [i, ks] : groups) {
      const int64_t target = start + int64_t(std::llround(double(i) / fps / tb));
      bool seek = false;
      if (last_pts == INT64_MIN) {
        seek = !has_held && (!at_start || i > 0);
      } else if (double(target) + half <= double(last_pts) && !has_held) {
        seek = true;
      } else {
        const AVIndexEntry* e = avformat_index_get_entry_from_timestamp(st, target, AVSEEK_FLAG_BACKWARD);
        seek = e != nullptr && (e->flags & AVINDEX_KEYFRAME) && e->timestamp > last_pts;
      }
      if (seek) seek_to(target);
      bool found = false;
      while (next_frame()) {
        if (double(frame_pts(frame.get())) < double(target) - half) continue;
        emit(i, ks, sink);
        found = true;
        break;
      }
      if (!found) {
        at_start = false;
        last_pts = INT64_MIN;
        missing(i, double(target) * tb, ks, sink, "the stream ended before it");
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
    return SecondsSpan{s.times.front(), double(ix.end_pts) * s.tb};
  }
  const VideoMetadata& m = s.metadata();
  const int64_t n = s.approximate_count();
  return SecondsSpan{m.start_time, m.start_time + double(n) / (m.average_fps > 0 ? m.average_fps : 1.0)};
}

int64_t VideoReader::index_at(double seconds) {
  Impl& s = *impl_;
  const std::optional<SecondsSpan> span = seconds_span(s.opt.seek_mode);
  if (!span) {
    const FrameIndex& ix = s.frame_index();
    throw DecodeError("the stream's timestamps do not increase (frame " + std::to_string(ix.restart) + " at " +
                      seconds_text(s.times[size_t(ix.restart)]) + " follows frame " + std::to_string(ix.restart - 1) +
                      " at " + seconds_text(s.times[size_t(ix.restart - 1)]) +
                      "), so a timestamp names no single frame: request the frames by index");
  }
  if (!(seconds >= span->begin && seconds < span->end)) {
    std::string why = "timestamp " + seconds_text(seconds) + " is outside the stream's [" +
                      seconds_text(span->begin) + ", " + seconds_text(span->end) +
                      ") (video_metadata's begin_stream_seconds, end_stream_seconds)";
    const VideoMetadata& m = s.metadata();
    if (seconds < span->begin && seconds >= m.start_time) {
      why += ": no frame is displayed before the first one, at " + seconds_text(span->begin) +
             ", although the header's start (start_seconds) is " + seconds_text(m.start_time);
    }
    throw FrameRangeError(why);
  }
  if (s.opt.seek_mode == SeekMode::Exact) {
    return int64_t(std::upper_bound(s.times.begin(), s.times.end(), seconds) - s.times.begin()) - 1;
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
    throw FrameRangeError("frame index " + std::to_string(i) + " is out of range: the stream has " +
                          std::to_string(n) + " frames (valid indices 0.." + std::to_string(n - 1) + ")");
  }
  if (s.opt.seek_mode == SeekMode::Exact) return s.times[size_t(i)];
  const VideoMetadata& m = s.metadata();
  return m.start_time + double(i) / (m.average_fps > 0 ? m.average_fps : 1.0);
}

double VideoReader::end_time() {
  Impl& s = *impl_;
  if (s.opt.seek_mode == SeekMode::Exact) return double(s.frame_index().end_pts) * s.tb;
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
  s.wanted_pts.clear();
  if (s.opt.seek_mode == SeekMode::Exact) {
    if (s.frame_index().decode_order) {
      s.decode_in_order(groups, sink);
      return;
    }
    for (const auto& g : groups) s.wanted_pts.push_back(s.frame_index().pts[size_t(g.first)]);
    s.decode_exact(groups, sink);
  } else {  // approximate targets are not packet timestamps: wanted_pts stays empty, nothing is skipped
    s.decode_approximate(groups, sink);
  }
}

int64_t VideoReader::corrupt_packets() const { return impl_->corrupt + impl_->reader.corrupt_packets(); }
int64_t VideoReader::converted_frames() const { return impl_->converted; }
int64_t VideoReader::skipped_packets() const { return impl_->skipped; }

}  // namespace spdl_torch::core
