// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the audio core (csrc/core/audio_*, detail/audio_*), run under AddressSanitizer +
// UndefinedBehaviorSanitizer by `make test-sanitize`. No torch.
//
//   audio_test [CORPUS_DIR...]
// Synthetic checks (bad inputs, option validation), then every 10th file of CORPUS_DIR/audio: path == memory,
// whole == two windows concatenated (native and 16 kHz mono), the batch decoder's slots == single decodes,
// and truncated copies decode a prefix or raise DecodeError (never another exception, never a sanitizer report);
// WAV files: the native reader's samples == FFmpeg's; MP3 / Ogg files: the packet index's length == the whole
// decode's, and the index cache keeps a file's index (not a file changed a moment before).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/audio_batch.h"
#include "core/audio_decoder.h"
#include "core/detail/ffmpeg/audio_index.h"
#include "core/detail/ffmpeg/audio_index_cache.h"
#include "core/detail/ffmpeg/audio_stream.h"
#include "core/detail/io/byte_reader.h"
#include "core/detail/parse/audio_packets.h"
#include "core/detail/parse/flac_frames.h"
#include "core/detail/parse/ogg_pages.h"
#include "core/errors.h"
#include "core/thread_pool.h"
#include "tests/test_support.h"

using namespace spdl_torch::core;
namespace fs = std::filesystem;


template <typename Fn>
static std::string decode_error(Fn&& fn) {
  try {
    fn();
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

static void test_bad_inputs() {
  const Bytes garbage(4096, 0x5a);
  CHECK(!decode_error([&] { decode_audio_to_buffer(MediaSource::from_memory(garbage.data(), garbage.size()), {}); })
             .empty());
  const uint8_t one = 0;
  CHECK(decode_error([&] { decode_audio_to_buffer(MediaSource::from_memory(&one, 0), {}); }).find("empty input") !=
        std::string::npos);
  bool missing = false;
  try {
    read_audio_metadata(MediaSource::from_path("/nonexistent/spdl_torch/a.wav"));
  } catch (const IOError& e) {
    missing = e.code() == ENOENT;
  }
  CHECK(missing);
  AudioOptions bad;
  bad.start = 2.0;
  bad.stop = 1.0;
  bool invalid = false;
  try {
    bad.validate();
  } catch (const InvalidArgument&) {
    invalid = true;
  }
  CHECK(invalid);
  CHECK(audio_sample_index(0.5, 16000) == 8000 && audio_sample_index(1.0 / 3.0, 3) == 1);
}

static bool same(const DecodedAudio& a, const DecodedAudio& b) {
  return a.result.written == b.result.written && a.result.num_channels == b.result.num_channels &&
         a.samples == b.samples;
}

// An Ogg page with `body` bytes (one lacing value each 255, as libogg lays them out), serial `serial`.
static Bytes ogg_page(uint32_t serial, size_t body) {
  Bytes p = {'O', 'g', 'g', 'S', 0, 0};
  p.resize(27, 0);
  for (int i = 0; i < 4; ++i) p[size_t(14 + i)] = uint8_t(serial >> (8 * i));
  std::vector<uint8_t> lacing(body / 255, 255);
  lacing.push_back(uint8_t(body % 255));
  p[26] = uint8_t(lacing.size());
  p.insert(p.end(), lacing.begin(), lacing.end());
  p.insert(p.end(), body, uint8_t(0x4f));  // 'O': a body full of near-capture patterns
  return p;
}

static void test_ogg_pages() {
  using namespace spdl_torch::core::detail;
  Bytes one = ogg_page(0x11223344, 300), two = ogg_page(0x55667788, 40);
  CHECK(ogg_page_serial(one.data(), one.size()) == 0x11223344);
  CHECK(ogg_page_serial(one.data(), 26) == -1);  // header cut short
  Bytes single = one;
  single.insert(single.end(), one.begin(), one.end());
  CHECK(ogg_last_page_serial(single.data(), single.size()) == 0x11223344);
  Bytes chained = one;
  chained.insert(chained.end(), two.begin(), two.end());
  CHECK(ogg_last_page_serial(chained.data(), chained.size()) == 0x55667788);
  CHECK(detail::ogg_single_chain(MediaSource::from_memory(single.data(), single.size())));
  CHECK(!detail::ogg_single_chain(MediaSource::from_memory(chained.data(), chained.size())));
  // A last page cut short is skipped for the complete one before it; a capture pattern inside a body whose
  // header would run past the end is not a page.
  Bytes cut(chained.begin(), chained.end() - 10);
  CHECK(ogg_last_page_serial(cut.data(), cut.size()) == 0x11223344);
  Bytes fake = one;
  const Bytes header(two.begin(), two.begin() + 27);  // its length (27 + 1 + 79) runs past the end
  fake.insert(fake.end() - 50, header.begin(), header.end());
  CHECK(ogg_last_page_serial(fake.data(), fake.size()) == 0x11223344);
  for (size_t n = 0; n < 40; ++n) ogg_last_page_serial(one.data(), n);  // every short prefix: no overread
  CHECK(!detail::ogg_single_chain(MediaSource::from_memory(one.data(), 10)));
  CHECK(!detail::ogg_single_chain(MediaSource::from_path("/nonexistent/file.ogg")));
}

static void test_file(const fs::path& path, ThreadPool& pool, int& truncations) {
  const Bytes data = read_all(path);
  const MediaSource mem = MediaSource::from_memory(data.data(), data.size());
  for (int rate : {0, 16000}) {
    AudioOptions opt;
    opt.sample_rate = rate;
    opt.num_channels = rate ? 1 : 0;
    DecodedAudio whole, from_path;
    const std::string err = decode_error([&] {
      whole = decode_audio_to_buffer(mem, opt);
      from_path = decode_audio_to_buffer(MediaSource::from_path(path.string()), opt);
    });
    if (!err.empty()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), err.c_str());
      CHECK(err.empty());
      return;
    }
    CHECK(same(whole, from_path));
    // two windows split at 40% == the whole
    const int r = whole.result.sample_rate;
    const double cut = 0.4 * double(whole.result.written) / r;
    AudioOptions a = opt, b = opt;
    a.stop = cut;
    b.start = cut;
    if (audio_sample_index(cut, r) >= whole.result.written) continue;
    const DecodedAudio wa = decode_audio_to_buffer(mem, a), wb = decode_audio_to_buffer(mem, b);
    const int64_t na = wa.result.written, nb = wb.result.written, n = whole.result.written;
    CHECK(na + nb == n);
    const size_t bps = 4;
    bool equal = na + nb == n;
    for (int c = 0; equal && c < whole.result.num_channels; ++c) {
      const uint8_t* w = whole.samples.data() + size_t(c) * size_t(n) * bps;
      equal = std::memcmp(w, wa.samples.data() + size_t(c) * size_t(na) * bps, size_t(na) * bps) == 0 &&
              std::memcmp(w + size_t(na) * bps, wb.samples.data() + size_t(c) * size_t(nb) * bps, size_t(nb) * bps) == 0;
    }
    CHECK(equal);
    if (rate) {  // the batch decoder's slot == the single decode's first 0.5 s
      AudioBatchOptions bo;
      bo.sample_rate = rate;
      bo.num_channels = 1;
      bo.duration = 0.5;
      std::vector<AudioBatchItem> items(2);
      items[0].source = mem;
      items[1].source = MediaSource::from_path(path.string());
      std::vector<float> slots;
      auto alloc = [&](int64_t len) {
        slots.assign(size_t(2 * len), -7.0f);
        AudioSlots s;
        s.data = reinterpret_cast<uint8_t*>(slots.data());
        s.stride_b = len;
        s.stride_c = len;
        s.length = len;
        return s;
      };
      const AudioBatchResult br = decode_audio_batch(items, bo, alloc, pool, nullptr);
      const int64_t k = std::min<int64_t>(8000, n);
      CHECK(br.errors[0].empty() && br.lengths[0] == k && br.lengths[1] == k);
      CHECK(std::memcmp(slots.data(), whole.samples.data(), size_t(k) * 4) == 0);
      CHECK(std::memcmp(slots.data() + 8000, whole.samples.data(), size_t(k) * 4) == 0);
      CHECK(std::all_of(slots.begin() + k, slots.begin() + 8000, [](float v) { return v == 0.0f; }));
    }
  }
  for (const double keep : {0.01, 0.5, 0.97}) {  // truncated copies: a prefix or DecodeError
    const size_t n = static_cast<size_t>(keep * static_cast<double>(data.size()));
    const Bytes cut(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
    for (bool strict : {true, false}) {
      AudioOptions opt;
      opt.strict = strict;
      decode_error([&] { decode_audio_to_buffer(MediaSource::from_memory(cut.data(), cut.size()), opt); });
      opt.start = 1.5;  // a late window: a seek into (or past) the truncated data
      decode_error([&] { decode_audio_to_buffer(MediaSource::from_memory(cut.data(), cut.size()), opt); });
      ++truncations;
    }
  }
}

// The per-packet sample counts the packet index uses, on hand-made headers.
static void test_packet_parsers() {
  using namespace spdl_torch::core::detail;
  const uint8_t mp1[4] = {0xff, 0xfb, 0x90, 0x00}, mp2[4] = {0xff, 0xf3, 0x90, 0x00}, mp25[4] = {0xff, 0xe3, 0, 0};
  const uint8_t l2[4] = {0xff, 0xfd, 0, 0}, l1[4] = {0xff, 0xff, 0, 0}, bad[4] = {0xff, 0xf9, 0, 0};
  CHECK(mpeg_audio_frame_samples(mp1, 4) == 1152 && mpeg_audio_frame_samples(mp2, 4) == 576);
  CHECK(mpeg_audio_frame_samples(mp25, 4) == 576 && mpeg_audio_frame_samples(l2, 4) == 1152);
  CHECK(mpeg_audio_frame_samples(l1, 4) == 384 && mpeg_audio_frame_samples(bad, 4) == -1);
  CHECK(mpeg_audio_frame_samples(mp1, 3) == -1);
  // Opus TOC: config (5 bits), stereo, frame count code (2 bits)
  const uint8_t silk10[1] = {0 << 3}, silk60x2[1] = {3 << 3 | 1}, celt20x6[2] = {31 << 3 | 3, 6};
  const uint8_t celt20x7[2] = {31 << 3 | 3, 7}, hybrid20x2[1] = {13 << 3 | 2}, zero[2] = {31 << 3 | 3, 0};
  CHECK(opus_packet_samples(silk10, 1) == 480 && opus_packet_samples(silk60x2, 1) == 5760);
  CHECK(opus_packet_samples(celt20x6, 2) == 5760 && opus_packet_samples(celt20x7, 2) == -1);
  CHECK(opus_packet_samples(hybrid20x2, 1) == 1920 && opus_packet_samples(zero, 2) == -1);
  CHECK(opus_packet_samples(celt20x6, 1) == -1 && opus_packet_samples(silk10, 0) == -1);
  VorbisBlocks v;
  const uint8_t junk[8] = {2, 1, 1, 0, 0, 0, 0, 0};
  CHECK(!v.init(junk, sizeof(junk)) && v.next(silk10, 1) == -1);
}

// FLAC: the frame search over the corpus' FLAC files lands on a frame header at or before each target.
static void test_flac_frames(const fs::path& path, int& located) {
  using namespace spdl_torch::core::detail;
  auto bytes = open_file_bytes(path.string());
  if (!bytes) return;
  uint8_t head[42];
  FlacStreamInfo info;
  if (bytes->read(0, head, 42) != 42 || !parse_flac_streaminfo(head + 8, 34, &info)) return;
  const int64_t start = flac_audio_offset(*bytes);
  if (start < 0 || info.total_samples <= 0) return;
  for (int64_t t : {info.total_samples / 3, info.total_samples / 2, info.total_samples - 1}) {
    int64_t pos = 0, first = 0;
    if (!locate_flac_frame(*bytes, info, start, t, &pos, &first)) continue;
    uint8_t h[32];
    FlacFrame f;
    CHECK(parse_flac_frame_header(h, bytes->read(pos, h, sizeof(h)), info, &f));
    CHECK(f.first_sample == first && first <= t && t - first <= 4 * int64_t(info.max_block));
    ++located;
  }
}

// A whole decode through `input` at `rate` (0: native), as bytes.
static Bytes decode_through(detail::AudioInput& input, int rate) {
  AudioOptions opt;
  opt.sample_rate = rate;
  opt.num_channels = rate ? 1 : 0;
  AudioBuffer buffer(SampleType::Float32, 1 << 16);
  detail::OutputWindow window;
  const AudioDecodeResult r = detail::decode_audio_stream(input, opt, window, buffer);
  return buffer.take_compact(r.written);
}

// WAV: the native reader's samples equal FFmpeg's (its demuxer and PCM decoder), at the native rate and
// resampled; MP3 / Ogg: the packet index (demuxed, not decoded) counts the whole decode's samples exactly.
static void test_native_and_indexed(const fs::path& path, int& wavs, int& indexed) {
  const MediaSource source = MediaSource::from_path(path.string());
  const std::string ext = path.extension().string();
  if (ext == ".wav") {
    try {
      for (int rate : {0, 16000}) {  // fresh inputs for each decode (an FFmpeg input is read to its end)
        detail::AudioInput native(source), ffmpeg(source, false);
        CHECK(decode_through(native, rate) == decode_through(ffmpeg, rate));
      }
      ++wavs;
    } catch (const DecodeError&) {
    }
  } else if (ext == ".mp3" || ext == ".ogg" || ext == ".oga" || ext == ".opus") {
    try {
      detail::AudioInput input(source, false);
      const AudioMetadata m = input.metadata();
      AudioOptions opt;
      const DecodedAudio whole = decode_audio_to_buffer(source, opt);
      auto index = detail::build_packet_index(source, {}, m.stream_index, whole.result.sample_rate);
      if (index->unusable.empty()) {
        if (index->total() != whole.result.written) {
          std::fprintf(stderr, "%s: index %lld samples, decode %lld\n", path.c_str(), (long long)index->total(),
                       (long long)whole.result.written);
        }
        CHECK(index->total() == whole.result.written);
        ++indexed;
      }
    } catch (const DecodeError&) {
    }
  }
}

static void test_index_cache(const fs::path& corpus_file) {
  using namespace spdl_torch::core::detail;
  const MediaSource source = MediaSource::from_path(corpus_file.string());
  const AudioMetadata m = read_audio_metadata(source);
  const int stream = m.stream_index, rate = m.sample_rate;
  clear_packet_index_cache();
  auto a = cached_packet_index(source, {}, stream, rate);
  auto b = cached_packet_index(source, {}, stream, rate);
  PacketIndexCacheStats s = packet_index_cache_stats();
  CHECK(s.misses == 1 && s.hits == 1 && s.entries == 1 && a == b && s.bytes >= a->memory_bytes());
  // A copy written just now: indexed, used, not kept.
  const fs::path copy = fs::temp_directory_path() / "spdl_torch_audio_test_index.mp3";
  fs::copy_file(corpus_file, copy, fs::copy_options::overwrite_existing);
  auto c = cached_packet_index(MediaSource::from_path(copy.string()), {}, stream, rate);
  s = packet_index_cache_stats();
  CHECK(s.not_kept == 1 && s.entries == 1 && c->packets() == a->packets());
  // Bytes: never kept.
  const Bytes data = read_all(corpus_file);
  cached_packet_index(MediaSource::from_memory(data.data(), data.size()), {}, stream, rate);
  CHECK(packet_index_cache_stats().not_kept == 2);
  fs::remove(copy);
  clear_packet_index_cache();
}

int main(int argc, char** argv) {
  test_bad_inputs();
  test_ogg_pages();
  test_packet_parsers();
  ThreadPool pool(2);
  int files = 0, truncations = 0, wavs = 0, indexed = 0, located = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path dir = fs::path(argv[i]) / "audio";
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    for (size_t k = 0; k < paths.size(); k += 10) {
      test_file(paths[k], pool, truncations);
      ++files;
    }
    for (size_t k = 0; k < paths.size(); k += 5) test_native_and_indexed(paths[k], wavs, indexed);
    for (const fs::path& p : paths) {
      if (p.extension() == ".flac") test_flac_frames(p, located);
    }
    for (const fs::path& p : paths) {
      if (p.extension() == ".mp3") {
        test_index_cache(p);
        break;
      }
    }
  }
  std::printf(
      "audio_test: %d checks, %d failed; corpus: %d audio files, %d truncations, %d WAVs native == FFmpeg, "
      "%d packet indexes == the whole decode, %d FLAC frames located\n",
      g_checks, g_failures, files, truncations, wavs, indexed, located);
  return g_failures == 0 ? 0 : 1;
}
