// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/flac_frames.h"

#include <algorithm>
#include <memory>

namespace spdl_torch::core::detail {
namespace {

uint8_t crc8(const uint8_t* p, size_t n) {
  uint8_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = uint8_t(crc & 0x80 ? (crc << 1) ^ 0x07 : crc << 1);
  }
  return crc;
}

constexpr size_t kProbe = 64 * 1024;  // bytes read per probe of the search

// The first frame header at or after `from` in buf[0, n) whose successor in the buffer (if any) follows on in
// samples; its offset in the buffer, or -1.
int64_t confirmed_header(const uint8_t* buf, size_t n, size_t from, const FlacStreamInfo& info, FlacFrame* out) {
  for (size_t i = from; i + 2 <= n; ++i) {
    if (buf[i] != 0xff || (buf[i + 1] & 0xfe) != 0xf8) continue;
    FlacFrame f;
    if (!parse_flac_frame_header(buf + i, n - i, info, &f)) continue;
    bool next_found = false, follows = false;
    for (size_t j = i + 2; j + 2 <= n && !next_found; ++j) {
      FlacFrame g;
      if (buf[j] == 0xff && (buf[j + 1] & 0xfe) == 0xf8 && parse_flac_frame_header(buf + j, n - j, info, &g)) {
        next_found = true;
        follows = g.first_sample == f.first_sample + f.block_size;
      }
    }
    if (next_found && !follows) continue;
    *out = f;
    return int64_t(i);
  }
  return -1;
}

}  // namespace

bool parse_flac_streaminfo(const uint8_t* p, size_t n, FlacStreamInfo* info) {
  if (p == nullptr || n < 34) return false;
  info->min_block = p[0] << 8 | p[1];
  info->max_block = p[2] << 8 | p[3];
  info->sample_rate = p[10] << 12 | p[11] << 4 | p[12] >> 4;
  info->channels = ((p[12] >> 1) & 7) + 1;
  info->bits = ((p[12] & 1) << 4 | p[13] >> 4) + 1;
  info->total_samples =
      int64_t(p[13] & 15) << 32 | int64_t(p[14]) << 24 | int64_t(p[15]) << 16 | int64_t(p[16]) << 8 | int64_t(p[17]);
  return info->min_block >= 16 && info->max_block >= info->min_block && info->sample_rate > 0;
}

bool parse_flac_frame_header(const uint8_t* p, size_t n, const FlacStreamInfo& info, FlacFrame* frame) {
  if (n < 6 || p[0] != 0xff || (p[1] & 0xfe) != 0xf8) return false;
  const bool variable = p[1] & 1;
  const int bs_code = p[2] >> 4, sr_code = p[2] & 15, ch_code = p[3] >> 4, ss_code = (p[3] >> 1) & 7;
  if (bs_code == 0 || sr_code == 15 || ch_code >= 11 || ss_code == 3 || (p[3] & 1)) return false;
  // The coded frame or sample number: UTF-8 style, up to 7 bytes.
  size_t at = 4;
  int extra = 0;
  uint64_t number = p[at];
  if (number >= 0x80) {
    if ((number & 0xe0) == 0xc0)
      extra = 1, number &= 0x1f;
    else if ((number & 0xf0) == 0xe0)
      extra = 2, number &= 0x0f;
    else if ((number & 0xf8) == 0xf0)
      extra = 3, number &= 0x07;
    else if ((number & 0xfc) == 0xf8)
      extra = 4, number &= 0x03;
    else if ((number & 0xfe) == 0xfc)
      extra = 5, number &= 0x01;
    else if (number == 0xfe)
      extra = 6, number = 0;
    else
      return false;
  }
  if (!variable && extra > 5) return false;
  ++at;
  for (int i = 0; i < extra; ++i, ++at) {
    if (at >= n || (p[at] & 0xc0) != 0x80) return false;
    number = number << 6 | (p[at] & 0x3f);
  }
  int block = 0;
  if (bs_code == 1) {
    block = 192;
  } else if (bs_code <= 5) {
    block = 576 << (bs_code - 2);
  } else if (bs_code == 6) {
    if (at + 1 > n) return false;
    block = p[at++] + 1;
  } else if (bs_code == 7) {
    if (at + 2 > n) return false;
    block = (p[at] << 8 | p[at + 1]) + 1;
    at += 2;
  } else {
    block = 256 << (bs_code - 8);
  }
  static const int kRates[12] = {0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000};
  int rate = sr_code < 12 ? kRates[sr_code] : 0;
  if (sr_code == 12) {
    if (at + 1 > n) return false;
    rate = p[at++] * 1000;
  } else if (sr_code == 13 || sr_code == 14) {
    if (at + 2 > n) return false;
    rate = (p[at] << 8 | p[at + 1]) * (sr_code == 14 ? 10 : 1);
    at += 2;
  }
  if (at + 1 > n || crc8(p, at) != p[at]) return false;
  static const int kBits[8] = {0, 8, 12, 0, 16, 20, 24, 32};
  const int channels = ch_code < 8 ? ch_code + 1 : 2;
  if ((rate != 0 && rate != info.sample_rate) || channels != info.channels ||
      (kBits[ss_code] != 0 && kBits[ss_code] != info.bits) || block > info.max_block) {
    return false;
  }
  if (!variable && info.min_block != info.max_block) return false;
  frame->first_sample = variable ? int64_t(number) : int64_t(number) * info.max_block;
  frame->block_size = block;
  return true;
}

int64_t flac_audio_offset(ByteReader& input) {
  uint8_t head[4];
  if (input.read(0, head, 4) != 4 || head[0] != 'f' || head[1] != 'L' || head[2] != 'a' || head[3] != 'C') return -1;
  int64_t pos = 4;
  for (int blocks = 0; blocks < 4096; ++blocks) {
    uint8_t h[4];
    if (input.read(pos, h, 4) != 4) return -1;
    pos += 4 + (int64_t(h[1]) << 16 | int64_t(h[2]) << 8 | int64_t(h[3]));
    if (h[0] & 0x80) return pos < input.size() ? pos : -1;
  }
  return -1;
}

bool locate_flac_frame(ByteReader& input, const FlacStreamInfo& info, int64_t start, int64_t target, int64_t* pos,
                       int64_t* first) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kProbe]);
  int64_t lo = start, lo_sample = 0, hi = input.size();
  int64_t hi_sample = info.total_samples > 0 ? info.total_samples : target + 1;
  const int64_t close = 4 * int64_t(info.max_block);
  for (int probe = 0; probe < 24 && target - lo_sample > close && hi - lo > 16; ++probe) {
    // Interpolate, back off by a probe's quarter (the frame found is after the guess).
    const double f = double(target - lo_sample) / double(std::max<int64_t>(hi_sample - lo_sample, 1));
    int64_t guess = lo + int64_t(f * double(hi - lo)) - int64_t(kProbe / 4);
    guess = std::clamp<int64_t>(guess, lo + 1, hi - 1);
    const size_t got = input.read(guess, buf.get(), kProbe);
    FlacFrame fr;
    const int64_t at = confirmed_header(buf.get(), got, 0, info, &fr);
    if (at < 0 || guess + at >= hi) {
      hi = guess;  // nothing between the guess and hi: the frame wanted is before it
      continue;
    }
    if (fr.first_sample <= lo_sample || fr.first_sample >= hi_sample) break;  // not ordered: stop
    if (fr.first_sample <= target) {
      lo = guess + at;
      lo_sample = fr.first_sample;
    } else {
      hi = guess + at;
      hi_sample = fr.first_sample;
    }
  }
  if (target - lo_sample > close || lo == start) return false;
  *pos = lo;
  *first = lo_sample;
  return true;
}

}  // namespace spdl_torch::core::detail
