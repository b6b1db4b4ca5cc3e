// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_index.h"

extern "C" {
#include <libavutil/intreadwrite.h>
#include <libavutil/mathematics.h>
}

#include <algorithm>
#include <new>
#include <string>

#include "core/detail/parse/audio_packets.h"
#include "core/detail/parse/ogg_pages.h"
#include "core/errors.h"

namespace spdl_torch::core::detail {

int64_t PacketIndex::packet_at(int64_t sample) const {
  // start[i] <= sample < start[i + 1]; packets with no output share their start with the next one.
  const auto it = std::upper_bound(start.begin(), start.end() - 1, sample);
  return std::max<int64_t>(int64_t(it - start.begin()) - 1, 0);
}

int64_t PacketIndex::first_at_position(int64_t i) const {
  return int64_t(std::lower_bound(pos.begin(), pos.begin() + i, pos[size_t(i)]) - pos.begin());
}

PacketTrim PacketIndex::trim(int64_t i) const {
  const auto it =
      std::lower_bound(trims.begin(), trims.end(), i, [](const PacketTrim& t, int64_t p) { return t.packet < p; });
  if (it != trims.end() && it->packet == i) return *it;
  PacketTrim none;
  none.packet = i;
  return none;
}

size_t PacketIndex::memory_bytes() const {
  return sizeof(*this) + pos.capacity() * sizeof(int64_t) + size.capacity() * sizeof(int32_t) +
         start.capacity() * sizeof(int64_t) + trims.capacity() * sizeof(PacketTrim) + unusable.capacity();
}

namespace {

// MPEG audio: the header bits a decoder's output configuration follows (version, layer, sample rate,
// mono or not); a stream whose packets differ in them changes configuration mid-stream.
int64_t mpeg_audio_key(const AVPacket* p) {
  if (p->size < 4 || p->data[0] != 0xff || (p->data[1] & 0xe0) != 0xe0) return -1;
  return int64_t(p->data[1] & 0x1e) << 16 | int64_t(p->data[2] & 0x0c) << 8 | ((p->data[3] >> 6) == 3 ? 1 : 0);
}

// What libavcodec's decode loop (decode.c) does with a frame of `n` samples from a packet with `trim`:
// AV_PKT_DATA_SKIP_SAMPLES sets the pending skip (which carries over to later frames) and the frame's
// discard padding; a packet flagged discard drops its frame and counts against the skip. Returns the
// samples the frame keeps.
int64_t trimmed(int64_t n, const PacketTrim& trim, int64_t* pending) {
  int64_t discard = 0;
  if (trim.has_side_data) {
    *pending = trim.skip;
    discard = trim.discard;
  }
  if (n <= 0) return 0;
  if (trim.discard_flag) {
    *pending = std::max<int64_t>(0, *pending - n);
    return 0;
  }
  if (*pending > 0) {
    if (n <= *pending) {
      *pending -= n;
      return 0;
    }
    n -= *pending;
    *pending = 0;
  }
  if (discard > 0 && discard <= n) n -= discard;
  return n;
}

}  // namespace

std::shared_ptr<const PacketIndex> build_packet_index(const MediaSource& source, const DemuxOptions& options,
                                                      int stream, int sample_rate) {
  auto index = std::make_shared<PacketIndex>();
  index->sample_rate = sample_rate;
  index->start.push_back(0);
  auto give_up = [&](std::string why) {
    index->unusable = std::move(why);
    index->pos = {};
    index->size = {};
    index->start = {0};
    index->trims = {};
    return index;
  };
  if (sample_rate <= 0) return give_up("no sample rate");
  try {
    Demuxer demuxer(source, options);
    if (stream < 0 || stream >= int(demuxer.format()->nb_streams)) return give_up("no such stream");
    // Each chain of an Ogg file restarts its granule positions and may change the stream's parameters.
    if (std::string(demuxer.format_name()) == "ogg" && !ogg_single_chain(source)) {
      return give_up("an Ogg file of several chains");
    }
    const AVStream* st = demuxer.stream(stream);
    const AVCodecID codec = st->codecpar->codec_id;
    const bool mpeg_audio = codec == AV_CODEC_ID_MP3 || codec == AV_CODEC_ID_MP2;
    // The samples the decoder outputs for each packet come from the packets' own bits (audio_packets.h).
    VorbisBlocks vorbis;
    if (codec == AV_CODEC_ID_VORBIS &&
        !vorbis.init(st->codecpar->extradata, size_t(std::max(st->codecpar->extradata_size, 0)))) {
      return give_up("Vorbis headers that cannot be read");
    }
    if (!mpeg_audio && codec != AV_CODEC_ID_VORBIS && codec != AV_CODEC_ID_OPUS) return give_up("another codec");
    if (codec == AV_CODEC_ID_OPUS && sample_rate != 48000) return give_up("Opus decoded at another rate");
    AVPacketPtr packet(av_packet_alloc());
    if (!packet) throw std::bad_alloc();
    int64_t key = -1;
    int64_t pending = 0;
    int64_t last_pending = -1;  // the last packet before which a skip was pending
    while (demuxer.read(stream, packet.get())) {
      const AVPacket* p = packet.get();
      const int64_t i = index->packets();
      if (p->pos < 0) return give_up("a packet without a byte position");
      if (i > 0 && p->pos < index->pos.back()) return give_up("packet positions that go back");
      if (p->flags & AV_PKT_FLAG_CORRUPT) return give_up("a packet flagged corrupt");
      const size_t bytes = size_t(std::max(p->size, 0));
      const int64_t n = mpeg_audio                  ? mpeg_audio_frame_samples(p->data, bytes)
                        : codec == AV_CODEC_ID_OPUS ? opus_packet_samples(p->data, bytes)
                                                    : vorbis.next(p->data, bytes);
      if (n < 0) return give_up("a packet the decoder would reject");
      if (mpeg_audio) {
        const int64_t k = mpeg_audio_key(p);
        if (k < 0 || (key >= 0 && k != key)) return give_up("MPEG audio headers that change mid-stream");
        key = k;
      }
      PacketTrim trim;
      trim.packet = i;
      trim.discard_flag = (p->flags & AV_PKT_FLAG_DISCARD) != 0;
      for (int s = 0; s < p->side_data_elems; ++s) {
        const AVPacketSideData& sd = p->side_data[s];
        if (sd.type == AV_PKT_DATA_SKIP_SAMPLES) {
          if (sd.size < 10) return give_up("short skip-samples side data");
          trim.has_side_data = true;
          trim.skip = AV_RL32(sd.data);
          trim.discard = AV_RL32(sd.data + 4);
        } else if (sd.type == AV_PKT_DATA_NEW_EXTRADATA || sd.type == AV_PKT_DATA_PARAM_CHANGE) {
          return give_up("stream parameters that change mid-stream");
        }
      }
      if (pending > 0) last_pending = i;
      const int64_t kept = trimmed(n, trim, &pending);
      if (trim.has_side_data || trim.discard_flag) index->trims.push_back(trim);
      index->pos.push_back(p->pos);
      index->size.push_back(p->size);
      index->start.push_back(index->start.back() + kept);
    }
    index->settled = last_pending + 1;
  } catch (const DecodeError& e) {
    return give_up(std::string("the index pass failed: ") + e.what());
  } catch (const IOError& e) {
    return give_up(std::string("the index pass failed: ") + e.what());
  }
  index->pos.shrink_to_fit();
  index->size.shrink_to_fit();
  index->start.shrink_to_fit();
  index->trims.shrink_to_fit();
  return index;
}

}  // namespace spdl_torch::core::detail
