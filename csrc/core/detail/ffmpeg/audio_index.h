// SPDX-License-Identifier: BSD-3-Clause
// The packet index of an audio stream whose container has no exact index of its own (MP3, Ogg): every
// packet's byte position, size and whole-decode position, built by demuxing the input once (no decoding) and
// cached per file. A window is then reached by seeking to a packet's byte position; the packets read after
// the seek are matched against the index, so a seek that lands elsewhere, or a file that changed, is noticed
// and never gives other samples. The per-file cache: audio_index_cache.h. Internal header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/detail/ffmpeg/demux.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

// A packet's AV_PKT_DATA_SKIP_SAMPLES side data and AV_PKT_FLAG_DISCARD, as the demuxer gave them to a
// decode from the start (a read after a seek may not: they are rewritten from the index).
struct PacketTrim {
  int64_t packet = 0;
  uint32_t skip = 0;     // samples to skip from the start of the output (it carries over to later frames)
  uint32_t discard = 0;  // samples to drop from the end of this packet's frame
  bool has_side_data = false;
  bool discard_flag = false;
};

struct PacketIndex {
  int sample_rate = 0;            // the rate the positions count at (the decoder's)
  std::vector<int64_t> pos;       // byte position of each packet (equal for the packets an Ogg page starts)
  std::vector<int32_t> size;      // bytes
  std::vector<int64_t> start;     // whole-decode position of each packet's first output sample; size n + 1
  std::vector<PacketTrim> trims;  // the packets with side data or the discard flag, in order
  int64_t settled = 0;            // from this packet on, no skip is pending (earlier ones: no seek)
  std::string unusable;           // why seeking by this index would not be exact ("" when it is)

  int64_t packets() const { return int64_t(pos.size()); }
  int64_t total() const { return start.empty() ? 0 : start.back(); }
  // The packet whose output holds whole-decode sample `sample` (the last one when past the end).
  int64_t packet_at(int64_t sample) const;
  // The first packet at the same byte position as packet `i` (the first packet its Ogg page starts).
  int64_t first_at_position(int64_t i) const;
  // The side data of packet `i` (a PacketTrim with has_side_data false when it has none).
  PacketTrim trim(int64_t i) const;
  size_t memory_bytes() const;
};

// Demuxes stream `stream` of `source` from its start (a fresh Demuxer opened with `options`, as the decode's) and
// indexes its packets (MP3, MP2, Opus, Vorbis); `sample_rate` is the decoder's output rate. Each packet's output
// length is read from its own bits (detail/parse/audio_packets.h), then trimmed as libavcodec trims it. A stream
// whose packets would not give exact positions gets an index with `unusable` set (another codec, packets without
// positions or that a decoder would reject, positions that go back, a read error, a packet flagged corrupt,
// parameters that change mid-stream, an Ogg file of several chains).
std::shared_ptr<const PacketIndex> build_packet_index(const MediaSource& source, const DemuxOptions& options,
                                                      int stream, int sample_rate);

}  // namespace spdl_torch::core::detail
