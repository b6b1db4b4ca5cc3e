// SPDX-License-Identifier: BSD-3-Clause
// How many samples FFmpeg's decoders output for a packet of MP3, Opus or Vorbis, read from the packet's own bits
// (and, for Vorbis, its headers) rather than the demuxer's durations: Ogg's are trimmed at the end of a stream
// and, for Vorbis, follow the packet's previous-window flag where FFmpeg's decoder follows the previous packet
// (an encoder that writes the flag wrong gets other durations from the demuxer than samples from the decoder).
// The packet index (detail/ffmpeg/audio_index.h) counts positions with them. Bounds-checked, no library.
// Internal header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core::detail {

// An MPEG audio frame's samples per channel (layer I: 384; II: 1152; III: 1152, or 576 for MPEG-2 / 2.5) from
// its 4-byte header; -1 when `p` holds no frame header.
int64_t mpeg_audio_frame_samples(const uint8_t* p, size_t n);

// An Opus packet's samples at 48 kHz from its TOC byte and frame count (RFC 6716 section 3.1); -1 when
// malformed (empty, a code-3 packet without its count byte or with 0 frames, over 120 ms).
int64_t opus_packet_samples(const uint8_t* p, size_t n);

// The Vorbis decoder's output lengths: its two block sizes (identification header) and each mode's block flag
// (setup header, read from its end as FFmpeg's Vorbis parser reads it).
class VorbisBlocks {
 public:
  // From FFmpeg's Vorbis extradata (the three headers in Xiph lacing). False when they cannot be read.
  bool init(const uint8_t* extradata, size_t n);
  // The samples the decoder outputs for the next audio packet: 0 for the first one (it only primes the overlap),
  // then (previous block + this block) / 4. -1 for a packet the decoder rejects (empty, a header packet, a mode
  // past the mode count).
  int64_t next(const uint8_t* p, size_t n);

 private:
  int blocksize_[2] = {0, 0};
  bool blockflag_[64] = {};
  int modes_ = 0;
  int mode_mask_ = 0;
  int previous_ = -1;  // the previous packet's block flag; -1 before the first packet
};

}  // namespace spdl_torch::core::detail
