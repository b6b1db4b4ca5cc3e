// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/wav/wav_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core::detail {
namespace {

constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();
constexpr int kMaxChunks = 4096;  // chunk headers walked before giving the file to FFmpeg
constexpr int kMaxChannels = 64;
constexpr int64_t kMaxRate = int64_t(1) << 20;
constexpr uint32_t kPlaceholderSize = 0x7ffff000;  // what some streaming writers put in the data chunk's size

uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t le64(const uint8_t* p) { return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32; }
bool is_tag(const uint8_t* p, const char* tag) { return std::memcmp(p, tag, 4) == 0; }

WavFormat unsupported(std::string reason) {
  WavFormat f;
  f.reason = std::move(reason);
  return f;
}

// The first 12 of the 16 bytes after the four of KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT.
constexpr uint8_t kSubtypeBase[12] = {0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71};

// The fmt chunk (`size` bytes of which `body` holds the first min(size, 40)), as FFmpeg's ff_get_wav_header
// reads it; sets the sample format, channels, rate, block alignment and speaker mask, or returns the reason.
std::string parse_fmt(const uint8_t* body, uint32_t size, WavFormat* f, uint32_t* tag_out) {
  if (size < 16) return "a fmt chunk of " + std::to_string(size) + " bytes";
  uint32_t tag = le16(body);
  const int channels = le16(body + 2);
  const uint32_t rate = le32(body + 4);
  const int block_align = le16(body + 12);
  int bits = le16(body + 14);
  int extra = size >= 18 ? int(std::min<uint32_t>(size - 18, le16(body + 16))) : 0;
  uint64_t mask = 0;
  bool extensible = false;
  if (tag == 0xfffe) {
    if (extra < 22) return "a WAVE_FORMAT_EXTENSIBLE header without its extension";
    extensible = true;
    if (le16(body + 18) != 0) bits = le16(body + 18);  // valid bits per sample: FFmpeg picks the codec by them
    mask = le32(body + 20);
    if (std::memcmp(body + 28, kSubtypeBase, sizeof(kSubtypeBase)) != 0) return "an extensible subformat GUID";
    tag = le32(body + 24);
    extra -= 22;
  }
  *tag_out = tag;
  if (extra > 0) return "extra format bytes (codec data)";
  int bytes = 0;
  if (tag == 1) {
    bytes = (bits + 7) / 8;
    static const WavSampleFormat kInt[] = {WavSampleFormat::U8, WavSampleFormat::S16, WavSampleFormat::S24,
                                           WavSampleFormat::S32};
    if (bits < 1 || bytes > 4) return std::to_string(bits) + "-bit PCM";
    f->format = kInt[bytes - 1];
  } else if (tag == 3) {
    if (bits != 32 && bits != 64) return std::to_string(bits) + "-bit float";
    bytes = bits / 8;
    f->format = bits == 32 ? WavSampleFormat::F32 : WavSampleFormat::F64;
  } else {
    char text[40];
    std::snprintf(text, sizeof(text), "format tag 0x%04x", unsigned(tag));
    return text;
  }
  if (channels < 1 || channels > kMaxChannels) return std::to_string(channels) + " channels";
  if (rate < 1 || rate > uint32_t(kMaxRate)) return "a sample rate of " + std::to_string(rate) + " Hz";
  if (block_align != channels * bytes) return "a block alignment of " + std::to_string(block_align) + " bytes";
  f->channels = channels;
  f->sample_rate = int(rate);
  f->block_align = block_align;
  if (extensible && mask != 0 && __builtin_popcountll(mask) == channels) f->channel_mask = mask;
  return "";
}

// Whether `data` holds what FFmpeg would probe as a compressed stream in PCM, at a 16-bit word position: an
// IEC 61937 (S/PDIF) burst preamble (both byte orders) or, in 16-bit PCM, a DTS sync word (16- and 14-bit,
// both byte orders). A vectorisable first pass over the words finds the blocks worth a closer look.
bool compressed_in_pcm(const uint8_t* data, size_t n, bool dts) {
  // The first 16-bit word (little-endian) of each pattern, and the 32 bits from it.
  static const uint16_t kFirst[6] = {0xf872, 0x72f8, 0xfe7f, 0x7ffe, 0xff1f, 0x1fff};
  static const uint32_t kWhole[6] = {0x4e1ff872, 0x1f4e72f8, 0x0180fe7f, 0x80017ffe, 0x00e8ff1f, 0xe8001fff};
  const int patterns = dts ? 6 : 2;
  constexpr size_t kBlock = 256;  // words
  const size_t words = n / 2;
  for (size_t b = 0; b < words; b += kBlock) {
    const size_t end = std::min(words, b + kBlock);
    uint16_t w[kBlock];
    std::memcpy(w, data + 2 * b, 2 * (end - b));
    int hit = 0;
    for (size_t i = 0; i < end - b; ++i) {
      hit |= (w[i] == kFirst[0]) | (w[i] == kFirst[1]) | (w[i] == kFirst[2]) | (w[i] == kFirst[3]) |
             (w[i] == kFirst[4]) | (w[i] == kFirst[5]);
    }
    if (!hit) continue;
    for (size_t i = b; i + 1 < words && i < end; ++i) {
      uint32_t v;
      std::memcpy(&v, data + 2 * i, 4);
      for (int k = 0; k < patterns; ++k) {
        if (v == kWhole[k]) return true;
      }
    }
  }
  return false;
}

}  // namespace

const char* WavFormat::codec_name() const {
  switch (format) {
    case WavSampleFormat::U8: return "pcm_u8";
    case WavSampleFormat::S16: return "pcm_s16le";
    case WavSampleFormat::S24: return "pcm_s24le";
    case WavSampleFormat::S32: return "pcm_s32le";
    case WavSampleFormat::F32: return "pcm_f32le";
    case WavSampleFormat::F64: return "pcm_f64le";
  }
  return "pcm";
}

int WavFormat::output_bytes() const {
  switch (format) {
    case WavSampleFormat::U8: return 1;
    case WavSampleFormat::S16: return 2;
    case WavSampleFormat::S24:
    case WavSampleFormat::S32:
    case WavSampleFormat::F32: return 4;
    case WavSampleFormat::F64: return 8;
  }
  return 0;
}

WavFormat read_wav_format(ByteReader& input) {
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return unsupported("a big-endian host");
#endif
  const int64_t size = input.size();
  uint8_t head[12];
  if (size < 12 || input.read(0, head, 12) != 12) return unsupported("not a RIFF/WAVE file");
  const bool rf64 = is_tag(head, "RF64");
  if ((!rf64 && !is_tag(head, "RIFF")) || !is_tag(head + 8, "WAVE")) return unsupported("not a RIFF/WAVE file");
  WavFormat f;
  int64_t pos = 12;
  uint64_t rf64_data = 0;
  if (rf64) {
    uint8_t ds64[32];
    if (input.read(12, ds64, 32) != 32 || !is_tag(ds64, "ds64") || le32(ds64 + 4) < 24)
      return unsupported("an RF64 file without ds64");
    rf64_data = le64(ds64 + 16);
    if (rf64_data > uint64_t(kNoEnd >> 3)) return unsupported("an RF64 data size out of range");
    pos = 20 + int64_t(le32(ds64 + 4));
  }
  bool got_fmt = false, got_data = false;
  uint32_t tag = 0;
  int64_t data_end = kNoEnd;
  for (int chunk = 0;; ++chunk) {
    if (chunk >= kMaxChunks) return unsupported("too many chunks");
    uint8_t h[8];
    if (pos > size - 8 || input.read(pos, h, 8) != 8) break;
    const uint32_t csize = le32(h + 4);
    int64_t next = pos + 8 + int64_t(csize);
    if (is_tag(h, "fmt ")) {
      if (!got_fmt) {
        uint8_t body[40] = {0};
        const size_t want = std::min<uint32_t>(csize, sizeof(body));
        if (input.read(pos + 8, body, want) != want) return unsupported("a fmt chunk cut short");
        const std::string why = parse_fmt(body, csize, &f, &tag);
        if (!why.empty()) return unsupported(why);
      }
      got_fmt = true;
    } else if (is_tag(h, "data")) {
      if (got_data) return unsupported("a second data chunk");
      got_data = true;
      f.data_offset = pos + 8;
      if (rf64) {
        f.stated_bytes = int64_t(rf64_data);
        next = data_end = f.data_offset + int64_t(rf64_data);
      } else if (csize == 0 || csize == 0xffffffffu) {
        next = data_end = kNoEnd;  // a WAV written to a pipe: the data runs to the end of the file
        if (csize == 0) break;
      } else {
        // A size of 2 GiB - 4 KiB or more that the file does not hold is a streamed WAV's placeholder too (the
        // data runs to the end); a smaller one, a truncated file.
        f.stated_bytes = csize >= kPlaceholderSize && next > size ? -1 : int64_t(csize);
        data_end = next;
      }
    } else if (is_tag(h, "XMA2") || is_tag(h, "SMV0")) {
      return unsupported("an XMA2 or SMV0 chunk");
    } else if (is_tag(h, "LIST") && csize < 4) {
      return unsupported("a LIST chunk of " + std::to_string(csize) + " bytes");
    } else if (is_tag(h, "bext") && csize < 602) {
      return unsupported("a bext chunk of " + std::to_string(csize) + " bytes");
    }
    if (next >= size) break;
    pos = next + (next & 1);  // chunks start at even offsets
  }
  if (!got_fmt) return unsupported("no fmt chunk");
  if (!got_data) return unsupported("no data chunk");
  const int64_t end = std::min(data_end, size);
  f.data_bytes = std::max<int64_t>(0, end - f.data_offset);
  // FFmpeg reads on at the end of the data chunk when a second data chunk follows (its chunk walk from there).
  if (data_end < size) {
    int64_t p = data_end;
    for (int chunk = 0; p <= size - 4; ++chunk) {
      if (chunk >= kMaxChunks) return unsupported("too many chunks after the data");
      uint8_t h[8] = {0};
      input.read(p, h, 8);
      if (is_tag(h, "data")) return unsupported("a second data chunk");
      if (p > size - 8) break;
      const uint32_t csize = le32(h + 4);
      p += 8 + int64_t(csize) + (csize & 1);
    }
  }
  if (tag == 1) {
    const bool s16 = f.format == WavSampleFormat::S16;
    const size_t probe = size_t(std::min<int64_t>(f.data_bytes, s16 ? 128 * 1024 : 64 * 1024));
    std::unique_ptr<uint8_t[]> head_bytes(new uint8_t[probe + 4]);
    const size_t got = input.read(f.data_offset, head_bytes.get(), probe);
    if (compressed_in_pcm(head_bytes.get(), got, s16)) return unsupported("S/PDIF or DTS data in PCM");
  }
  f.supported = true;
  return f;
}

WavReader::WavReader(const MediaSource& source) {
  if (source.in_memory()) {
    input_ = std::make_unique<MemoryBytes>(source.data, source.size);
  } else {
    input_ = open_file_bytes(source.path);
  }
  if (input_) head_size_ = input_->read(0, head_, sizeof(head_));
  format_ = input_ ? read_wav_format(*input_) : unsupported("not a regular file");
}

WavReader::~WavReader() = default;

int64_t WavReader::read(int64_t first, int64_t count, uint8_t* out) {
  const WavFormat& f = format_;
  const int64_t n = std::max<int64_t>(0, std::min(count, f.samples() - first));
  if (n == 0) return 0;
  const int64_t offset = f.data_offset + first * f.block_align;
  const size_t bytes = size_t(n) * size_t(f.block_align);
  if (f.format != WavSampleFormat::S24) {
    const size_t got = input_->read(offset, out, bytes);
    return int64_t(got / size_t(f.block_align));
  }
  packed_.resize(bytes);
  const size_t got = input_->read(offset, packed_.data(), bytes);
  const size_t values = got / 3 / size_t(f.channels) * size_t(f.channels);
  // pcm_s24le's output: the 24-bit value in the top bytes of an int32.
  const uint8_t* src = packed_.data();
  for (size_t i = 0; i < values; ++i, src += 3) {
    const uint32_t v = uint32_t(src[0]) << 8 | uint32_t(src[1]) << 16 | uint32_t(src[2]) << 24;
    std::memcpy(out + 4 * i, &v, 4);
  }
  return int64_t(values / size_t(f.channels));
}

}  // namespace spdl_torch::core::detail
