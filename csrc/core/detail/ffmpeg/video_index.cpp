// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/video_index.h"

#include <algorithm>
#include <functional>
#include <new>

#include "core/detail/ffmpeg/frame_reader.h"

namespace spdl_torch::core::detail {

int64_t FrameIndex::key_at(int64_t pts_value) const {
  const auto it = std::upper_bound(key_pts.begin(), key_pts.end(), pts_value);
  return int64_t(it - key_pts.begin()) - 1;
}

int64_t FrameIndex::key_of(int64_t i) const { return key_at(pts[size_t(i)]); }

FrameIndex scan_frame_index(Demuxer& demuxer, int index, bool* needs_decoding) {
  FrameIndex out;
  *needs_decoding = false;
  AVPacketPtr packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  struct Key {
    int64_t pts, seek;
  };
  std::vector<Key> keys;
  int64_t last_end = INT64_MIN;
  // The kMaxReorderedFrames + 1 largest pts so far (a min-heap): a pts below its smallest is lower than
  // more earlier frames' than any decoder reorders.
  std::vector<int64_t> largest;
  const auto later = std::greater<int64_t>();
  while (demuxer.read(index, packet.get())) {
    const AVPacket& p = *packet;
    if (p.pts == AV_NOPTS_VALUE) {
      *needs_decoding = true;
      return FrameIndex{};
    }
    const int64_t ts = p.pts;
    // Seek by the key frame's pts: demuxers indexed by decode time shift by their own offset (mov's edit
    // list), so min(pts, dts) could land a whole GOP early; a later key frame's dts never precedes it.
    if (p.flags & AV_PKT_FLAG_KEY) keys.push_back({ts, ts});
    if (p.flags & AV_PKT_FLAG_DISCARD) continue;  // decoded, never output (libavcodec drops its frame)
    if (largest.size() > kMaxReorderedFrames && ts < largest.front()) {
      *needs_decoding = true;
      return FrameIndex{};
    }
    largest.push_back(ts);
    std::push_heap(largest.begin(), largest.end(), later);
    if (largest.size() > kMaxReorderedFrames + 1) {
      std::pop_heap(largest.begin(), largest.end(), later);
      largest.pop_back();
    }
    out.pts.push_back(ts);
    last_end = std::max(last_end, ts + std::max<int64_t>(p.duration, 1));
  }
  av_packet_unref(packet.get());
  std::sort(out.pts.begin(), out.pts.end());
  if (std::adjacent_find(out.pts.begin(), out.pts.end()) != out.pts.end()) {  // two frames, one pts
    *needs_decoding = true;
    return FrameIndex{};
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) { return a.pts < b.pts; });
  for (const Key& k : keys) {
    out.key_pts.push_back(k.pts);
    out.key_seek.push_back(k.seek);
  }
  out.end_pts = out.pts.empty() ? 0 : std::max(last_end, out.pts.back() + 1);
  return out;
}

int64_t frame_timestamp(const AVFrame* f, int64_t previous_end) {
  if (f->pts != AV_NOPTS_VALUE) return f->pts;
  if (f->best_effort_timestamp != AV_NOPTS_VALUE) return f->best_effort_timestamp;
  return previous_end;
}

int64_t frame_duration(const AVFrame* f) {
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 30, 100)
  return std::max<int64_t>(f->duration, 1);
#else
  return std::max<int64_t>(f->pkt_duration, 1);
#endif
}

FrameIndex scan_decoded_frames(Demuxer& demuxer, int index) {
  FrameIndex out;
  out.decoded = true;
  AVCodecContextPtr codec = open_stream_decoder(demuxer, index, 1);
  FrameReader reader(demuxer, index, codec.get(), false);
  AVFramePtr frame(av_frame_alloc());
  if (!frame) throw std::bad_alloc();
  int64_t last_end = INT64_MIN;
  int64_t previous_end = AV_NOPTS_VALUE;
  std::vector<int64_t> output;  // every frame in output order; a frame without a timestamp: the last end
  while (reader.next(frame.get())) {
    const AVFrame& f = *frame;
    const int64_t ts = frame_timestamp(&f, previous_end);
    output.push_back(ts != AV_NOPTS_VALUE ? ts : previous_end != AV_NOPTS_VALUE ? previous_end : 0);
    if (ts == AV_NOPTS_VALUE) continue;
    // No presentation order once a timestamp does not increase: frames are then counted in output order.
    if (!out.decode_order && !out.pts.empty() && ts <= out.pts.back()) {
      out.decode_order = true;
      out.restart = int64_t(output.size()) - 1;
    }
    previous_end = ts + frame_duration(&f);
    out.pts.push_back(ts);
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(58, 7, 100)
    const bool key = f.flags & AV_FRAME_FLAG_KEY;
#else
    const bool key = f.key_frame;
#endif
    if (key) {
      // Seek by the packet's decode time (what a dts-only container indexes); a frame drained at the end
      // has none: seek from the key frame before it instead (earlier is always safe, only slower).
      int64_t seek = f.pkt_dts != AV_NOPTS_VALUE ? std::min(ts, f.pkt_dts) : AV_NOPTS_VALUE;
      if (seek == AV_NOPTS_VALUE) seek = out.key_seek.empty() ? INT64_MIN : out.key_seek.back();
      out.key_pts.push_back(ts);
      out.key_seek.push_back(seek);
    }
    last_end = std::max(last_end, previous_end);
  }
  if (out.decode_order) {  // every frame the decoder outputs, in its order; no key frame to seek to
    out.pts = std::move(output);
    out.key_pts.clear();
    out.key_seek.clear();
  } else {  // ascending already
    std::vector<std::pair<int64_t, int64_t>> keys;
    for (size_t k = 0; k < out.key_pts.size(); ++k) keys.push_back({out.key_pts[k], out.key_seek[k]});
    std::sort(keys.begin(), keys.end());
    for (size_t k = 0; k < keys.size(); ++k) {
      out.key_pts[k] = keys[k].first;
      out.key_seek[k] = keys[k].second;
    }
  }
  out.end_pts = out.pts.empty() ? 0 : std::max(last_end, out.pts.back() + 1);
  return out;
}

}  // namespace spdl_torch::core::detail
