// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the demux layer shared by video and audio (csrc/core/detail/demux.*, frame_reader.*), run
// under AddressSanitizer + UndefinedBehaviorSanitizer by `make test-sanitize`. No torch.
//
//   media_test [CORPUS_DIR...]
// Runs the synthetic checks, then opens every file under CORPUS_DIR/video and CORPUS_DIR/audio from its path
// and from memory: both give the same packets and the same number of frames; every truncation of a file
// either decodes or raises DecodeError (never another exception, never a sanitizer report).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/detail/ffmpeg/demux.h"
#include "core/detail/ffmpeg/frame_reader.h"
#include "core/errors.h"
#include "tests/test_support.h"

using namespace spdl_torch::core;
using namespace spdl_torch::core::detail;
namespace fs = std::filesystem;


struct Scan {
  int64_t packets = 0;
  int64_t packet_bytes = 0;
  int64_t frames = 0;
  std::string error;  // DecodeError text, empty when the whole stream decoded
};

// Demuxes and decodes the best stream of `kind`, leniently (corrupt packets counted, not raised).
static Scan scan(const MediaSource& source, StreamKind kind) {
  Scan s;
  try {
    Demuxer demuxer(source);
    const int index = demuxer.find_stream(kind);
    AVPacketPtr packet(av_packet_alloc());
    while (demuxer.read(index, packet.get())) {
      ++s.packets;
      s.packet_bytes += packet->size;
    }
    Demuxer again(source);
    AVCodecContextPtr codec = open_stream_decoder(again, index, 1);
    FrameReader reader(again, index, codec.get(), /*strict=*/false);
    AVFramePtr frame(av_frame_alloc());
    while (reader.next(frame.get())) ++s.frames;
  } catch (const DecodeError& e) {
    s.error = e.what();
    if (s.error.empty()) s.error = "(empty message)";
  }
  return s;
}

static void test_bad_inputs() {
  const Bytes garbage(4096, 0x5a);
  for (const Bytes& data : {garbage, Bytes{0x1a, 0x45, 0xdf, 0xa3}}) {
    bool decode_error = false;
    try {
      Demuxer d(MediaSource::from_memory(data.data(), data.size()));
      d.find_stream(StreamKind::Video);
    } catch (const DecodeError& e) {
      decode_error = std::string(e.what()).find(": ") != std::string::npos;  // "<what>: <FFmpeg's reason>"
    }
    CHECK(decode_error);
  }
  const uint8_t one = 0;
  bool empty = false;
  try {
    Demuxer d(MediaSource::from_memory(&one, 0));
  } catch (const DecodeError& e) {
    empty = std::string(e.what()).find("empty input") != std::string::npos;
  }
  CHECK(empty);
  bool missing = false;
  try {
    Demuxer d(MediaSource::from_path("/nonexistent/spdl_torch/video.mp4"));
  } catch (const IOError& e) {
    missing = e.code() == ENOENT && std::string(e.what()).find("/nonexistent/spdl_torch/video.mp4") != std::string::npos;
  }
  CHECK(missing);
}

static void test_corpus(const fs::path& root, int& files, int& truncations) {
  for (const char* category : {"video", "audio"}) {
    const fs::path dir = root / category;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    // Every video; every 20th audio file (the audio set is large and alike).
    const size_t step = std::string(category) == "audio" ? 20 : 1;
    const StreamKind kind = std::string(category) == "audio" ? StreamKind::Audio : StreamKind::Video;
    for (size_t i = 0; i < paths.size(); i += step) {
      const Bytes data = read_all(paths[i]);
      ++files;
      const Scan from_path = scan(MediaSource::from_path(paths[i].string()), kind);
      const Scan from_memory = scan(MediaSource::from_memory(data.data(), data.size()), kind);
      if (from_path.packets != from_memory.packets || from_path.frames != from_memory.frames) {
        std::fprintf(stderr, "%s: path vs memory: %lld/%lld packets, %lld/%lld frames (%s | %s)\n",
                     paths[i].c_str(), (long long)from_path.packets, (long long)from_memory.packets,
                     (long long)from_path.frames, (long long)from_memory.frames, from_path.error.c_str(),
                     from_memory.error.c_str());
      }
      CHECK(from_path.packets == from_memory.packets);
      CHECK(from_path.packet_bytes == from_memory.packet_bytes);
      CHECK(from_path.frames == from_memory.frames);
      CHECK(from_path.error.empty() == from_memory.error.empty());
      for (const double keep : {0.0, 0.01, 0.5, 0.97}) {  // truncated copies decode less or fail cleanly
        const size_t n = static_cast<size_t>(keep * static_cast<double>(data.size()));
        Bytes cut(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
        const Scan s = scan(MediaSource::from_memory(cut.empty() ? &data[0] : cut.data(), cut.size()), kind);
        ++truncations;
        CHECK(s.error.empty() ? s.packets <= from_memory.packets : true);
        if (n == 0) CHECK(s.error.find("empty input") != std::string::npos);
      }
    }
  }
}

int main(int argc, char** argv) {
  test_bad_inputs();
  int files = 0, truncations = 0;
  for (int i = 1; i < argc; ++i) test_corpus(argv[i], files, truncations);
  std::printf("media_test: %d checks, %d failed; corpus: %d video/audio files from path and memory, %d truncations\n",
              g_checks, g_failures, files, truncations);
  return g_failures == 0 ? 0 : 1;
}
