// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the native RIFF/WAVE reader (csrc/core/detail/wav/), run under AddressSanitizer +
// UndefinedBehaviorSanitizer by `make test-sanitize`. Headers built byte by byte: the chunk walk (pad bytes,
// chunks before and after the data, data size 0 / 0xFFFFFFFF / past the end, RF64), the formats read natively
// and the ones left to FFmpeg with their reason, the samples as FFmpeg's PCM decoders give them (24-bit widened to
// the top of an int32), and every truncation of a header (never a read outside the input). No torch, no corpus.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/detail/wav/wav_reader.h"
#include "tests/test_support.h"

using namespace spdl_torch::core;
using namespace spdl_torch::core::detail;

static void put16(Bytes& b, uint32_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
static void put32(Bytes& b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}
static void put64(Bytes& b, uint64_t v) {
  put32(b, uint32_t(v));
  put32(b, uint32_t(v >> 32));
}
static void tag(Bytes& b, const char* t) { b.insert(b.end(), t, t + 4); }

// A chunk: tag, stated size (the body's unless given), body, pad byte when odd.
static Bytes chunk(const char* t, const Bytes& body, int64_t size = -1) {
  Bytes c;
  tag(c, t);
  put32(c, size < 0 ? uint32_t(body.size()) : uint32_t(size));
  c.insert(c.end(), body.begin(), body.end());
  if (body.size() % 2) c.push_back(0);
  return c;
}

static Bytes fmt_body(int format_tag, int channels, int rate, int bits, int block_align = -1, int cb_size = -1) {
  Bytes f;
  const int align = block_align >= 0 ? block_align : channels * ((bits + 7) / 8);
  put16(f, uint32_t(format_tag));
  put16(f, uint32_t(channels));
  put32(f, uint32_t(rate));
  put32(f, uint32_t(rate * align));
  put16(f, uint32_t(align));
  put16(f, uint32_t(bits));
  if (cb_size >= 0) put16(f, uint32_t(cb_size));
  return f;
}

static Bytes extensible_body(int subformat, int channels, int rate, int bits, int valid, uint32_t mask) {
  Bytes f = fmt_body(0xfffe, channels, rate, bits, -1, 22);
  put16(f, uint32_t(valid));
  put32(f, mask);
  put32(f, uint32_t(subformat));
  const uint8_t base[12] = {0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71};
  f.insert(f.end(), base, base + 12);
  return f;
}

static Bytes riff(const std::vector<Bytes>& chunks) {
  Bytes body;
  tag(body, "WAVE");
  for (const Bytes& c : chunks) body.insert(body.end(), c.begin(), c.end());
  Bytes out;
  tag(out, "RIFF");
  put32(out, uint32_t(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

static WavFormat parse(const Bytes& b) {
  static const uint8_t kNothing = 0;
  WavReader r(MediaSource::from_memory(b.empty() ? &kNothing : b.data(), b.size()));
  return r.format();
}

static Bytes ramp(size_t n, uint8_t start = 1) {
  Bytes d(n);
  for (size_t i = 0; i < n; ++i) d[i] = uint8_t(start + i * 7);
  return d;
}

static void test_plain_and_odd_chunks() {
  const Bytes data = ramp(400);
  const Bytes fmt = chunk("fmt ", fmt_body(1, 2, 16000, 16));
  WavFormat f = parse(riff({fmt, chunk("data", data)}));
  CHECK(f.supported && f.format == WavSampleFormat::S16 && f.channels == 2 && f.sample_rate == 16000);
  CHECK(f.block_align == 4 && f.data_offset == 44 && f.data_bytes == 400 && f.samples() == 100);
  CHECK(f.stated_samples() == 100 && std::string(f.codec_name()) == "pcm_s16le" && f.channel_mask == 0);
  // Chunks before the fmt and between fmt and data, one of odd size (its pad byte skipped); chunks after it.
  const Bytes odd = chunk("junk", ramp(3));
  const Bytes list = chunk("LIST", Bytes{'I', 'N', 'F', 'O'});
  f = parse(riff({odd, fmt, list, chunk("fact", Bytes{100, 0, 0, 0}), chunk("data", data), odd, list}));
  CHECK(f.supported && f.data_offset == 12 + 12 + 24 + 12 + 12 + 8 && f.data_bytes == 400);
  // An odd-sized data chunk of 8-bit samples: its pad byte is not a sample.
  f = parse(riff({chunk("fmt ", fmt_body(1, 1, 8000, 8)), chunk("data", ramp(9)), list}));
  CHECK(f.supported && f.format == WavSampleFormat::U8 && f.samples() == 9);
  // A fmt with cbSize 0, and one with trailing bytes past it (FFmpeg skips them).
  CHECK(parse(riff({chunk("fmt ", fmt_body(1, 2, 16000, 16, -1, 0)), chunk("data", data)})).supported);
  Bytes garbage = fmt_body(1, 2, 16000, 16, -1, 0);
  garbage.insert(garbage.end(), {1, 2, 3, 4});
  CHECK(parse(riff({chunk("fmt ", garbage), chunk("data", data)})).supported);
}

static void test_data_sizes() {
  const Bytes fmt = chunk("fmt ", fmt_body(1, 2, 16000, 16));
  const Bytes data = ramp(400);
  for (int64_t stated : {int64_t(0), int64_t(0xffffffff)}) {
    Bytes b = riff({fmt, chunk("data", data, stated)});
    b.insert(b.end(), {9, 9, 9});  // what follows a streamed WAV's data is data too: a partial frame dropped
    const WavFormat f = parse(b);
    CHECK(f.supported && f.stated_bytes == -1 && f.data_bytes == 403 && f.samples() == 100);
    CHECK(f.stated_samples() == 100);
  }
  // A data chunk larger than the file: what the file holds, the stated size kept (truncated); 0x7ffff000 or more:
  // a streaming writer's placeholder.
  const WavFormat over = parse(riff({fmt, chunk("data", data, 4000)}));
  CHECK(over.supported && over.stated_bytes == 4000 && over.data_bytes == 400 && over.stated_samples() == 1000);
  const WavFormat streamed = parse(riff({fmt, chunk("data", data, 0x7ffff000)}));
  CHECK(streamed.supported && streamed.stated_bytes == -1 && streamed.data_bytes == 400);
  // RF64: the ds64 chunk's size.
  Bytes body;
  tag(body, "WAVE");
  Bytes ds64;
  put64(ds64, 0);
  put64(ds64, 400);
  put64(ds64, 100);
  put32(ds64, 0);
  for (const Bytes& c : {chunk("ds64", ds64), fmt, chunk("data", data, 0xffffffff)})
    body.insert(body.end(), c.begin(), c.end());
  Bytes rf64;
  tag(rf64, "RF64");
  put32(rf64, 0xffffffff);
  rf64.insert(rf64.end(), body.begin(), body.end());
  const WavFormat r = parse(rf64);
  CHECK(r.supported && r.stated_bytes == 400 && r.data_bytes == 400 && r.samples() == 100);
}

static void test_formats_and_samples() {
  struct Case {
    int tag, bits;
    WavSampleFormat format;
    int output_bytes;
  };
  for (const Case& c : {Case{1, 8, WavSampleFormat::U8, 1}, Case{1, 16, WavSampleFormat::S16, 2},
                        Case{1, 24, WavSampleFormat::S24, 4}, Case{1, 32, WavSampleFormat::S32, 4},
                        Case{3, 32, WavSampleFormat::F32, 4}, Case{3, 64, WavSampleFormat::F64, 8},
                        Case{1, 12, WavSampleFormat::S16, 2}, Case{1, 20, WavSampleFormat::S24, 4}}) {
    const int bytes = (c.bits + 7) / 8;
    const Bytes data = ramp(size_t(2 * bytes * 10));
    const Bytes file = riff({chunk("fmt ", fmt_body(c.tag, 2, 44100, c.bits)), chunk("data", data)});
    WavReader r(MediaSource::from_memory(file.data(), file.size()));
    CHECK(r.format().supported && r.format().format == c.format && r.format().output_bytes() == c.output_bytes);
    std::vector<uint8_t> out(size_t(10 * 2 * c.output_bytes));
    CHECK(r.read(3, 100, out.data()) == 7);  // from sample 3: the 7 left
    if (c.format == WavSampleFormat::S24) {
      // 24-bit samples in the top three bytes of an int32 (pcm_s24le's output)
      for (int i = 0; i < 14; ++i) {
        const uint8_t* src = data.data() + 6 * 3 + 3 * i;
        CHECK(out[size_t(4 * i)] == 0 && std::memcmp(out.data() + 4 * i + 1, src, 3) == 0);
      }
    } else {
      CHECK(std::memcmp(out.data(), data.data() + 3 * 2 * bytes, size_t(7 * 2 * bytes)) == 0);
    }
    CHECK(r.read(10, 5, out.data()) == 0 && r.read(100, 5, out.data()) == 0);
  }
  // EXTENSIBLE: the subformat GUID's tag; valid bits pick the sample format as FFmpeg does; the speaker mask
  // kept when it names as many speakers as there are channels.
  WavFormat e = parse(riff({chunk("fmt ", extensible_body(1, 6, 48000, 24, 24, 0x60f)), chunk("data", ramp(36))}));
  CHECK(e.supported && e.format == WavSampleFormat::S24 && e.channel_mask == 0x60f && e.samples() == 2);
  e = parse(riff({chunk("fmt ", extensible_body(3, 2, 48000, 32, 0, 0x7)), chunk("data", ramp(16))}));
  CHECK(e.supported && e.format == WavSampleFormat::F32 && e.channel_mask == 0);  // 3 speakers, 2 channels
}

static void test_left_to_ffmpeg() {
  const Bytes data = ramp(400);
  auto reason = [&](const Bytes& fmt, const Bytes& d) { return parse(riff({chunk("fmt ", fmt), chunk("data", d)})); };
  CHECK(!reason(fmt_body(6, 1, 8000, 8), data).supported);  // A-law
  CHECK(reason(fmt_body(0x11, 1, 8000, 4), data).reason.find("format tag 0x0011") != std::string::npos);
  Bytes extra = fmt_body(1, 2, 16000, 16, -1, 2);
  extra.insert(extra.end(), {1, 0});
  CHECK(reason(extra, data).reason == "extra format bytes (codec data)");
  CHECK(reason(fmt_body(1, 2, 16000, 16, -1, 2), data).supported);          // a cbSize past the chunk: none (as FFmpeg)
  CHECK(!reason(fmt_body(1, 2, 16000, 16, 6), data).supported);             // block align 6
  CHECK(!reason(fmt_body(3, 2, 16000, 16), data).supported);                // 16-bit float
  CHECK(!reason(fmt_body(1, 2, 0, 16), data).supported);                    // no rate
  CHECK(!reason(fmt_body(1, 0, 16000, 16), data).supported);                // no channels
  CHECK(!reason(extensible_body(1, 2, 48000, 32, 20, 3), data).supported);  // 20 bits in 32
  Bytes guid = extensible_body(1, 2, 48000, 16, 16, 3);
  guid.back() ^= 1;
  CHECK(reason(guid, data).reason == "an extensible subformat GUID");
  const Bytes fmt = chunk("fmt ", fmt_body(1, 2, 16000, 16));
  CHECK(parse(riff({fmt, chunk("data", data), chunk("data", data)})).reason == "a second data chunk");
  CHECK(!parse(riff({chunk("data", data)})).supported);                                   // no fmt
  CHECK(!parse(riff({fmt})).supported);                                                   // no data
  CHECK(!parse(riff({fmt, chunk("LIST", Bytes{1, 2}), chunk("data", data)})).supported);  // a LIST FFmpeg refuses
  // S/PDIF and DTS sync words at a word position in the first bytes of 16-bit PCM: FFmpeg probes them.
  for (const Bytes& sync : {Bytes{0x72, 0xf8, 0x1f, 0x4e}, Bytes{0xf8, 0x72, 0x4e, 0x1f}, Bytes{0x7f, 0xfe, 0x80, 0x01},
                            Bytes{0xff, 0x1f, 0x00, 0xe8}}) {
    Bytes d(4096, 0);
    std::memcpy(d.data() + 1000, sync.data(), 4);
    CHECK(parse(riff({fmt, chunk("data", d)})).reason == "S/PDIF or DTS data in PCM");
    std::memmove(d.data() + 1001, d.data() + 1000, 4);  // at an odd position: not a word, read natively
    d[1000] = 0;
    CHECK(parse(riff({fmt, chunk("data", d)})).supported);
  }
  Bytes riffx = riff({fmt, chunk("data", data)});
  std::memcpy(riffx.data(), "RIFX", 4);
  CHECK(!parse(riffx).supported);
  CHECK(!parse(Bytes{}).supported);
  CHECK(parse(Bytes{'R', 'I', 'F', 'F'}).reason == "not a RIFF/WAVE file");
}

static void test_every_truncation() {
  // Every prefix of a header with odd chunks, and every chunk size field set to extremes: never a read outside
  // the input (ASan), never a data range past the end.
  const Bytes file = riff({chunk("junk", ramp(3)), chunk("fmt ", extensible_body(1, 2, 48000, 16, 16, 3)),
                           chunk("LIST", Bytes{'I', 'N', 'F', 'O'}), chunk("data", ramp(64))});
  for (size_t n = 0; n <= file.size(); ++n) {
    const Bytes cut(file.begin(), file.begin() + std::ptrdiff_t(n));
    const WavFormat f = parse(cut);
    if (f.supported) CHECK(f.data_offset + f.data_bytes <= int64_t(n));
  }
  for (size_t at = 16; at + 4 <= file.size(); at += 2) {
    for (uint32_t v : {0u, 1u, 0x7fffffffu, 0xfffffff0u, 0xffffffffu}) {
      Bytes b = file;
      std::memcpy(b.data() + at, &v, 4);
      const WavFormat f = parse(b);
      if (f.supported) CHECK(f.data_offset >= 0 && f.data_offset + f.data_bytes <= int64_t(b.size()));
    }
  }
}

int main() {
  test_plain_and_odd_chunks();
  test_data_sizes();
  test_formats_and_samples();
  test_left_to_ffmpeg();
  test_every_truncation();
  std::printf("wav_test: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
