// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/audio_packets.h"

#include <cstring>

namespace spdl_torch::core::detail {

int64_t mpeg_audio_frame_samples(const uint8_t* p, size_t n) {
  if (n < 4 || p[0] != 0xff || (p[1] & 0xe0) != 0xe0) return -1;
  const int version = (p[1] >> 3) & 3;  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5, 1: reserved
  const int layer = (p[1] >> 1) & 3;    // 3: layer I, 2: II, 1: III, 0: reserved
  if (version == 1 || layer == 0) return -1;
  if (layer == 3) return 384;
  if (layer == 2) return 1152;
  return version == 3 ? 1152 : 576;
}

int64_t opus_packet_samples(const uint8_t* p, size_t n) {
  if (n < 1) return -1;
  const int config = p[0] >> 3;
  static const int kSilk[4] = {480, 960, 1920, 2880}, kHybrid[2] = {480, 960}, kCelt[4] = {120, 240, 480, 960};
  const int frame = config < 12 ? kSilk[config & 3] : config < 16 ? kHybrid[config & 1] : kCelt[config & 3];
  int frames = 1;
  switch (p[0] & 3) {
    case 0: frames = 1; break;
    case 1:
    case 2: frames = 2; break;
    default:
      if (n < 2) return -1;
      frames = p[1] & 0x3f;
  }
  const int64_t samples = int64_t(frames) * frame;
  if (frames == 0 || samples > 5760) return -1;  // at most 120 ms
  return samples;
}

namespace {

// The setup header read backwards, bit by bit, as FFmpeg's Vorbis parser reads its byte-reversed copy
// most-significant bit first.
class BackwardBits {
 public:
  BackwardBits(const uint8_t* p, size_t n) : p_(p), bits_(int64_t(n) * 8) {}
  int64_t left() const { return bits_ - pos_; }
  int64_t pos() const { return pos_; }
  void seek(int64_t pos) { pos_ = pos; }
  uint32_t get(int count) {
    uint32_t v = 0;
    for (int i = 0; i < count; ++i, ++pos_) {
      if (pos_ >= bits_) return v << (count - i);  // past the start: zeros (as get_bits past its end reads)
      const size_t byte = size_t(bits_ / 8 - 1 - pos_ / 8);
      v = v << 1 | ((p_[byte] >> (7 - pos_ % 8)) & 1);
    }
    return v;
  }

 private:
  const uint8_t* p_;
  int64_t bits_;
  int64_t pos_ = 0;
};

int log2_floor(unsigned v) {
  int r = 0;
  while (v >>= 1) ++r;
  return r;
}

}  // namespace

bool VorbisBlocks::init(const uint8_t* x, size_t n) {
  // Xiph lacing: the header count - 1, then the lengths of all but the last header (255s and a rest).
  if (n < 1 || x[0] != 2) return false;
  size_t pos = 1, sizes[3] = {0, 0, 0};
  for (int h = 0; h < 2; ++h) {
    while (pos < n && x[pos] == 255) sizes[h] += 255, ++pos;
    if (pos >= n) return false;
    sizes[h] += x[pos++];
  }
  if (sizes[0] + sizes[1] > n - pos) return false;
  sizes[2] = n - pos - sizes[0] - sizes[1];
  const uint8_t* id = x + pos;
  const uint8_t* setup = id + sizes[0] + sizes[1];
  if (sizes[0] < 30 || id[0] != 1 || std::memcmp(id + 1, "vorbis", 6) != 0) return false;
  blocksize_[0] = 1 << (id[28] & 15);
  blocksize_[1] = 1 << (id[28] >> 4);
  if (sizes[2] < 7 || setup[0] != 5 || std::memcmp(setup + 1, "vorbis", 6) != 0) return false;
  // The framing bit, then the modes (each: block flag, window type 0, transform type 0, an 8-bit mapping) read
  // from the end for as long as they look like modes; the count is the last one that the 6 bits before it name.
  BackwardBits bits(setup, sizes[2]);
  int64_t framing = -1;
  while (bits.left() > 97) {
    if (bits.get(1)) {
      framing = bits.pos();
      break;
    }
  }
  if (framing < 0) return false;
  int count = 0, last = 0;
  while (bits.left() >= 97) {
    if (bits.get(8) > 63 || bits.get(16) || bits.get(16)) break;
    bits.get(1);
    if (++count > 64) break;
    const int64_t at = bits.pos();
    if (int(bits.get(6)) + 1 == count) last = count;
    bits.seek(at);
  }
  if (last == 0 || last > 63) return false;
  modes_ = last;
  mode_mask_ = ((1 << (log2_floor(unsigned(modes_ - 1)) + 1)) - 1) << 1;
  bits.seek(framing);
  for (int i = modes_ - 1; i >= 0; --i) {
    bits.get(32);
    bits.get(8);
    blockflag_[i] = bits.get(1) != 0;
  }
  previous_ = -1;
  return true;
}

int64_t VorbisBlocks::next(const uint8_t* p, size_t n) {
  if (n < 1 || (p[0] & 1) || modes_ == 0) return -1;
  const int mode = modes_ == 1 ? 0 : (p[0] & mode_mask_) >> 1;
  if (mode >= modes_) return -1;
  const int flag = blockflag_[mode] ? 1 : 0;
  const bool first = previous_ < 0;
  const int64_t samples = first ? 0 : (int64_t(blocksize_[flag]) + blocksize_[previous_]) / 4;
  previous_ = flag;
  return samples;
}

}  // namespace spdl_torch::core::detail
