// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/video_metadata.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "core/detail/ffmpeg/video_convert.h"

namespace spdl_torch::core::detail {

VideoMetadata read_video_header(Demuxer& demuxer, int stream) {
  const double tb = av_q2d(demuxer.stream(stream)->time_base);
  const AVStream* st = demuxer.stream(stream);
  const AVCodecParameters* par = st->codecpar;
  VideoMetadata m;
  m.stream_index = stream;
  m.container = demuxer.format_name();
  m.codec = avcodec_get_name(par->codec_id);
  const char* pf = av_get_pix_fmt_name(AVPixelFormat(par->format));
  m.pixel_format = pf ? pf : "";
  m.width = par->width;
  m.height = par->height;
  m.rotation = display_rotation(st);
  m.time_base_num = st->time_base.num;
  m.time_base_den = st->time_base.den;
  m.start_time = st->start_time != AV_NOPTS_VALUE ? double(st->start_time) * tb : 0.0;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
    m.duration = double(st->duration) * tb;
  } else if (demuxer.format()->duration > 0) {
    m.duration = double(demuxer.format()->duration) / AV_TIME_BASE;
  }
  if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0) {
    m.average_fps = av_q2d(st->avg_frame_rate);
  } else if (st->r_frame_rate.num > 0 && st->r_frame_rate.den > 0) {
    m.average_fps = av_q2d(st->r_frame_rate);
  }
  m.bit_rate = par->bit_rate > 0 ? par->bit_rate : demuxer.format()->bit_rate;
  AVStream* mst = demuxer.stream(stream);
  const int entries = avformat_index_get_entries_count(mst);
  int64_t discarded = 0;  // samples the container decodes but never shows (mov: outside the edit list)
  for (int i = 0; i < entries; ++i) {
    const AVIndexEntry* e = avformat_index_get_entry(mst, i);
    if (e == nullptr) continue;
    if (e->flags & AVINDEX_DISCARD_FRAME) ++discarded;
    if (e->flags & AVINDEX_KEYFRAME) m.key_frame_times.push_back(double(e->timestamp) * tb);
  }
  // The header's count of frames shown (the ffmpeg CLI's): its samples, less the discarded ones when the
  // index lists every sample.
  if (st->nb_frames > 0) m.num_frames = st->nb_frames - (entries == st->nb_frames ? discarded : 0);
  return m;
}

}  // namespace spdl_torch::core::detail
