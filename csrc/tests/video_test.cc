// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the video reader and clip decoder (csrc/core/video_*.{h,cpp}, detail/video_*), run under
// AddressSanitizer + UndefinedBehaviorSanitizer by `make test-sanitize`. No torch.
//
//   video_test [CORPUS_DIR...]
// Synthetic checks on small ffmpeg-made files (when the CLI exists): requests in any order equal a linear
// decode, frames not wanted are not converted, skip_frame gives identical frames, a first frame later than
// the header's start bounds the timestamp span, an oversized y4m header names its size; then over a subsample
// of CORPUS_DIR/video: the same, plus every truncation of a file's first 64 KiB either decodes or raises
// DecodeError (never another exception, a sanitizer report or a hang).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/image_types.h"
#include "core/thread_pool.h"
#include "core/video_clips.h"
#include "core/video_reader.h"
#include "tests/test_support.h"

using namespace spdl_torch::core;
namespace fs = std::filesystem;


// Frames `indices` of a reader as packed RGB byte strings.
static std::vector<Bytes> frames(VideoReader& r, const std::vector<int64_t>& indices) {
  std::vector<Bytes> out(indices.size());
  r.decode(indices, [&](size_t k, const VideoFrame* f) {
    if (f == nullptr) return;
    Bytes& b = out[k];
    for (int64_t y = 0; y < f->height; ++y) b.insert(b.end(), f->rgb + y * f->row_bytes, f->rgb + y * f->row_bytes + f->width * 3);
  });
  return out;
}

static void check_orders(const MediaSource& src, int64_t max_frames) {
  VideoReadOptions lin_opt;
  lin_opt.skip_nonref = false;
  VideoReader linear(src, lin_opt);
  const int64_t n = std::min(linear.num_frames(), max_frames);
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
  const std::vector<Bytes> ref = frames(linear, all);
  CHECK(linear.converted_frames() == n);
  std::vector<int64_t> order = {n - 1, 0, n / 2, n / 2, n - 1};
  for (int64_t i = n - 1; i >= 0; i -= 5) order.push_back(i);
  VideoReader r(src, VideoReadOptions{});
  const std::vector<Bytes> got = frames(r, order);
  for (size_t k = 0; k < order.size(); ++k) CHECK(got[k] == ref[size_t(order[k])]);
  // Each distinct wanted frame converted once per request group, nothing else.
  std::vector<int64_t> distinct = order;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(r.converted_frames() == int64_t(distinct.size()));
}

// An AVI with B-frames stores decode times only: its first frame shows at 0.04 s, its header starts at 0.
// The exact span starts at the first frame, and the header's start is outside it.
static void late_first_frame(const fs::path& dir) {
  const fs::path file = dir / "video_test_late.avi";
  const std::string cmd = "ffmpeg -v error -y -f lavfi -i testsrc2=size=64x48:rate=25:duration=0.4 -c:v mpeg4 -bf 2 " +
                          file.string();
  CHECK(std::system(cmd.c_str()) == 0);
  const Bytes data = read_all(file);
  VideoReader r(MediaSource::from_memory(data.data(), data.size()), VideoReadOptions{});
  const std::optional<SecondsSpan> span = r.seconds_span(SeekMode::Exact);
  CHECK(span && std::fabs(span->begin - 0.04) < 1e-9 && std::fabs(span->end - 0.44) < 1e-9);
  CHECK(r.metadata().start_time == 0.0);
  CHECK(r.index_at(span->begin) == 0 && r.index_at(span->end - 1e-6) == r.num_frames() - 1);
  std::string why;
  try {
    r.index_at(0.0);
  } catch (const FrameRangeError& e) {
    why = e.what();
  }
  CHECK(why.find("timestamp 0 s is outside the stream's [0.04 s, 0.44 s)") == 0);
  const std::optional<SecondsSpan> header = r.seconds_span(SeekMode::Approximate);
  CHECK(header && header->begin == 0.0 && std::fabs(header->end - 0.4) < 1e-9);
  fs::remove(file);
}

// A y4m whose header declares 40000x30000: FFmpeg's demuxer refuses it (with the error code EBUSY); the
// reader names the size against max_pixels, or FFmpeg's limit without one.
static void oversized_header(const fs::path& dir) {
  const fs::path file = dir / "video_test_small.y4m";
  const std::string cmd = "ffmpeg -v error -y -f lavfi -i testsrc2=size=64x48:rate=25:duration=0.08 -pix_fmt "
                          "yuv420p " + file.string();
  CHECK(std::system(cmd.c_str()) == 0);
  Bytes data = read_all(file);
  const std::string head(data.begin(), data.begin() + 18), edited = "YUV4MPEG2 W40000 H30000 ";
  CHECK(head == "YUV4MPEG2 W64 H48 ");
  data.erase(data.begin(), data.begin() + 18);
  data.insert(data.begin(), edited.begin(), edited.end());
  const MediaSource src = MediaSource::from_memory(data.data(), data.size());
  for (int64_t max_pixels : {kDefaultMaxPixels, int64_t(0)}) {
    VideoReadOptions opt;
    opt.max_pixels = max_pixels;
    std::string why;
    try {
      VideoReader r(src, opt);
    } catch (const DecodeError& e) {
      why = e.what();
    }
    CHECK(why.find(max_pixels > 0 ? "video: image of 40000x30000 = 1200000000 pixels exceeds the limit of"
                                  : "cannot open the input: its header declares a picture of 40000x30000") == 0);
    CHECK(why.find("busy") == std::string::npos);
  }
  fs::remove(file);
}

static void synthetic(const fs::path& dir) {
  if (std::system("command -v ffmpeg > /dev/null") != 0) {
    std::printf("video_test: no ffmpeg CLI, synthetic checks skipped\n");
    return;
  }
  const fs::path file = dir / "video_test_bframes.mp4";
  const std::string cmd = "ffmpeg -v error -y -f lavfi -i testsrc2=size=64x48:rate=25:duration=1.2 -c:v libx264 "
                          "-preset ultrafast -bf 3 -g 12 " + file.string();
  CHECK(std::system(cmd.c_str()) == 0);
  const Bytes data = read_all(file);
  const MediaSource mem = MediaSource::from_memory(data.data(), data.size());
  check_orders(mem, 30);
  check_orders(MediaSource::from_path(file.string()), 30);
  {  // skip_frame: identical frames, and packets were skipped
    VideoReadOptions a;
    a.skip_nonref = false;
    VideoReadOptions b;
    VideoReader ra(mem, a), rb(mem, b);
    const std::vector<int64_t> idx = {0, 6, 12, 18, 24, 29};
    CHECK(frames(ra, idx) == frames(rb, idx));
    CHECK(rb.skipped_packets() > 0);
    CHECK(ra.skipped_packets() == 0);
  }
  {  // key frames: exact, the pts of frames 0, 12, 24 (-g 12); approximate, the mp4 index's entries (decode
     // times: never after the pts)
    VideoReader r(mem, VideoReadOptions{});
    const std::vector<double> keys = r.key_frame_times(SeekMode::Exact);
    CHECK(keys.size() == 3);
    for (size_t k = 0; k < keys.size(); ++k) CHECK(std::fabs(keys[k] - r.frame_time(int64_t(12 * k))) < 1e-9);
    const std::vector<double> header = r.key_frame_times(SeekMode::Approximate);
    CHECK(header.size() == keys.size());
    for (size_t k = 0; k < header.size() && k < keys.size(); ++k) CHECK(header[k] <= keys[k] + 1e-9);
  }
  {  // range errors
    VideoReader r(mem, VideoReadOptions{});
    bool threw = false;
    try {
      r.decode({30}, [](size_t, const VideoFrame*) {});
    } catch (const FrameRangeError&) {
      threw = true;
    }
    CHECK(threw);
    CHECK(r.index_at(r.frame_time(7)) == 7);
  }
  {  // clips into a buffer, two videos on a pool
    ThreadPool pool(2);
    ClipOptions opt;
    opt.clip_len = 3;
    opt.clips_per_video = 2;
    opt.stride = 2;
    opt.frame.height = 8;
    opt.frame.width = 8;
    opt.frame.geometry = GeometryMode::Resize;
    opt.validate();
    const int64_t per = 2 * 3 * 3 * 8 * 8;
    std::vector<uint8_t> out(size_t(2 * per), 7);
    std::vector<ClipSlots> slots(2);
    for (int i = 0; i < 2; ++i) {
      SlotWriter& w = slots[size_t(i)].frame;
      w.data = out.data() + i * per;
      w.stride_c = 64;
      w.stride_h = 8;
      w.stride_w = 1;
      w.height = 8;
      w.width = 8;
      slots[size_t(i)].stride_clip = 3 * 3 * 64;
      slots[size_t(i)].stride_time = 3 * 64;
    }
    const Bytes bad = {1, 2, 3, 4};
    std::vector<ClipInput> in = {{mem, 1}, {MediaSource::from_memory(bad.data(), bad.size()), 2}};
    std::vector<int64_t> idx;
    const std::vector<std::string> errors = decode_video_clips(in, opt, slots, pool, idx);
    CHECK(errors[0].empty());
    CHECK(!errors[1].empty());
    CHECK(idx.size() == 12 && idx[0] >= 0 && idx[6] == -1);
    CHECK(std::all_of(out.begin() + per, out.end(), [](uint8_t v) { return v == 0; }));
  }
  fs::remove(file);
  late_first_frame(dir);
  oversized_header(dir);
}

static void corpus(const fs::path& root) {
  const fs::path dir = root / "video";
  if (!fs::is_directory(dir)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int checked = 0;
  for (size_t i = 0; i < files.size(); i += 6) {  // a subsample: every 6th file
    const Bytes data = read_all(files[i]);
    const MediaSource mem = MediaSource::from_memory(data.data(), data.size());
    try {
      check_orders(mem, 40);
      ++checked;
    } catch (const DecodeError& e) {
      std::fprintf(stderr, "video_test: %s: %s\n", files[i].filename().c_str(), e.what());
      ++g_failures;
    }
    const size_t head = std::min<size_t>(data.size(), 64 * 1024);
    for (size_t cut = 0; cut < head; cut += head / 7 + 1) {  // truncations: DecodeError or frames, nothing else
      try {
        VideoReadOptions o;
        o.strict = false;
        VideoReader r(MediaSource::from_memory(data.data(), cut), o);
        const int64_t n = r.num_frames();
        frames(r, {0, n - 1});
      } catch (const DecodeError&) {
      } catch (const FrameRangeError&) {
      }
    }
  }
  std::printf("video_test: %d corpus files checked\n", checked);
}

int main(int argc, char** argv) {
  synthetic(fs::temp_directory_path());
  for (int i = 1; i < argc; ++i) corpus(argv[i]);
  std::printf("video_test: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
