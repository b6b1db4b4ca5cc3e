// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of the C++ core, run under AddressSanitizer + UndefinedBehaviorSanitizer by `make test-sanitize`.
// No torch: links csrc/core directly. Not part of the extension (setup.py compiles csrc/**/*.cpp only).
//
//   core_test [CORPUS_DIR...]
// Runs the synthetic unit tests, then decodes every file under each CORPUS_DIR in every mode and checks
// invariants: no crash or sanitizer report, a sane shape, the same success/failure in every mode, and a
// DecodeError (never another exception) for bad data; PngSuite's corrupted x*.png must be refused.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/batch_decoder.h"
#include "core/detail/jpeg/jpeg_markers.h"
#include "core/detail/parse/gif_frame.h"
#include "core/detail/parse/image_chunks.h"
#include "core/detail/parse/image_format.h"
#include "core/detail/parse/tiff_ifd.h"
#include "core/detail/pixels/orientation.h"
#include "core/detail/pixels/pixel_convert.h"
#include "core/detail/pixels/pixel_limit.h"
#include "core/errors.h"
#include "core/image_decoder.h"
#include "core/resample.h"
#include "core/seconds_text.h"
#include "core/thread_pool.h"
#include "tests/test_support.h"

// After <cstdio>: jpeglib.h needs FILE and size_t.
#include <jpeglib.h>

using namespace spdl_torch::core;
namespace fs = std::filesystem;


// ---------------------------------------------------------------------------------------------- helpers
enum class Outcome { Ok, DecodeErr, OtherErr };

struct Result {
  Outcome outcome = Outcome::OtherErr;
  ImageShape shape;
  std::string message;
  int alloc_calls = 0;
};

static Result decode(const Bytes& data, ColorMode mode, int64_t max_pixels = kDefaultMaxPixels, bool orient = true) {
  Result r;
  std::vector<uint8_t> out;
  DecodeOptions opt;
  opt.mode = mode;
  opt.max_pixels = max_pixels;
  opt.apply_exif_orientation = orient;
  try {
    decode_image(data.data(), data.size(), opt, [&](const ImageShape& s) {
      ++r.alloc_calls;
      r.shape = s;
      out.assign(size_t(std::max<int64_t>(s.num_bytes(), 0)), 0xAB);
      return out.data();
    });
    r.outcome = Outcome::Ok;
  } catch (const DecodeError& e) {
    r.outcome = Outcome::DecodeErr;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.outcome = Outcome::OtherErr;
    r.message = e.what();
  }
  return r;
}

static void put16be(Bytes& b, unsigned v) { b.push_back(uint8_t(v >> 8)), b.push_back(uint8_t(v)); }

// An SOI, optional APP1 with `exif` (after "Exif\0\0"), SOF0 declaring w x h, then EOI: enough for the
// marker readers, not a decodable image.
static Bytes jpeg_header(unsigned w, unsigned h, const Bytes* exif = nullptr) {
  Bytes b{0xFF, 0xD8};
  if (exif) {
    b.push_back(0xFF), b.push_back(0xE1);
    put16be(b, unsigned(exif->size() + 8));
    const char tag[6] = {'E', 'x', 'i', 'f', 0, 0};
    b.insert(b.end(), tag, tag + 6);
    b.insert(b.end(), exif->begin(), exif->end());
  }
  b.push_back(0xFF), b.push_back(0xC0);
  put16be(b, 17);
  b.push_back(8);
  put16be(b, h);
  put16be(b, w);
  b.push_back(3);
  for (int c = 1; c <= 3; ++c) b.push_back(uint8_t(c)), b.push_back(c == 1 ? 0x22 : 0x11), b.push_back(c == 1 ? 0 : 1);
  b.push_back(0xFF), b.push_back(0xD9);
  return b;
}

// A TIFF structure with one IFD0 entry (tag, type, count 1, value), little or big endian.
static Bytes tiff_one_entry(bool little, unsigned tag, unsigned type, uint32_t value) {
  Bytes b;
  auto u16 = [&](unsigned v) { little ? (b.push_back(uint8_t(v)), b.push_back(uint8_t(v >> 8))) : put16be(b, v); };
  auto u32 = [&](uint32_t v) {
    if (little) { u16(v & 0xFFFF), u16(v >> 16); } else { u16(v >> 16), u16(v & 0xFFFF); }
  };
  b.push_back(little ? 'I' : 'M'), b.push_back(little ? 'I' : 'M');
  u16(42), u32(8), u16(1), u16(tag), u16(type), u32(1);
  if (type == 3 || type == 8) { u16(value), u16(0); } else { u32(value); }
  u32(0);
  return b;
}

// --------------------------------------------------------------------------------------------- unit tests
static void test_orientation() {
  // 2 rows x 3 columns, 2 channels, values encode (y, x, c).
  ImageShape s{2, 3, 2, ElemType::UInt8};
  Bytes src(size_t(s.num_bytes()));
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      for (int c = 0; c < 2; ++c) src[size_t((y * 3 + x) * 2 + c)] = uint8_t(y * 100 + x * 10 + c);
  for (int o = 0; o <= 9; ++o) {
    const ImageShape t = oriented_shape(s, o);
    CHECK(t.channels == 2);
    CHECK((o >= 5 && o <= 8) ? (t.height == 3 && t.width == 2) : (t.height == 2 && t.width == 3));
    Bytes dst(size_t(t.num_bytes()), 0xEE);
    apply_orientation(src.data(), s, o, dst.data());
    for (int y = 0; y < t.height; ++y)
      for (int x = 0; x < t.width; ++x) {
        int sy = y, sx = x;  // source pixel of displayed (y, x), per EXIF 2.32 / PIL.ImageOps.exif_transpose
        switch (o) {
          case 2: sx = 2 - x; break;
          case 3: sy = 1 - y, sx = 2 - x; break;
          case 4: sy = 1 - y; break;
          case 5: sy = x, sx = y; break;
          case 6: sy = 1 - x, sx = y; break;
          case 7: sy = 1 - x, sx = 2 - y; break;
          case 8: sy = x, sx = 2 - y; break;
          default: break;
        }
        for (int c = 0; c < 2; ++c) CHECK(dst[size_t((y * t.width + x) * 2 + c)] == uint8_t(sy * 100 + sx * 10 + c));
      }
  }
  // 16-bit, 1x1 and single-row images must not read out of range in any orientation.
  ImageShape one{1, 1, 4, ElemType::UInt16};
  Bytes p(8, 7), q(8, 0);
  for (int o = 1; o <= 8; ++o) {
    apply_orientation(p.data(), one, o, q.data());
    CHECK(q == p);
  }
}

static void test_pixel_convert() {
  // RGB -> GRAY with Pillow's luma; RGB -> RGBA adds opaque alpha.
  const uint8_t rgb[2 * 3] = {255, 0, 0, 10, 200, 30};
  CanonicalImage im{rgb, 6, 1, 2, 3, ElemType::UInt8};
  ImageShape g = output_shape(im, ColorMode::GRAY);
  CHECK(g.channels == 1 && g.width == 2 && g.height == 1 && g.type == ElemType::UInt8);
  uint8_t gray[2];
  convert_channels(im, ColorMode::GRAY, gray);
  CHECK(gray[0] == uint8_t((19595 * 255 + 32768) >> 16));
  CHECK(gray[1] == uint8_t((19595 * 10 + 38470 * 200 + 7471 * 30 + 32768) >> 16));
  uint8_t rgba[8];
  convert_channels(im, ColorMode::RGBA, rgba);
  CHECK(rgba[3] == 255 && rgba[7] == 255 && rgba[4] == 10 && rgba[6] == 30);
  // GA 16-bit -> RGB keeps the high byte; UNCHANGED keeps 16 bits and 2 channels.
  const uint16_t ga16[2] = {0x1234, 0xABCD};
  CanonicalImage im16{reinterpret_cast<const uint8_t*>(ga16), 4, 1, 1, 2, ElemType::UInt16};
  uint8_t out3[3];
  convert_channels(im16, ColorMode::RGB, out3);
  CHECK(out3[0] == 0x12 && out3[1] == 0x12 && out3[2] == 0x12);
  ImageShape u = output_shape(im16, ColorMode::UNCHANGED);
  CHECK(u.channels == 2 && u.type == ElemType::UInt16);
  uint16_t same[2];
  convert_channels(im16, ColorMode::UNCHANGED, reinterpret_cast<uint8_t*>(same));
  CHECK(same[0] == 0x1234 && same[1] == 0xABCD);
  // Bottom-up storage (negative row_bytes): row 0 is the last in memory.
  const uint8_t g2[2] = {1, 2};  // memory: row1=1, row0=2 when data points at the last row
  CanonicalImage up{g2 + 1, -1, 2, 1, 1, ElemType::UInt8};
  uint8_t o2[2];
  convert_channels(up, ColorMode::GRAY, o2);
  CHECK(o2[0] == 2 && o2[1] == 1);
}

static void test_pixel_depth_and_gray_alpha() {
  // RGBA 8-bit -> GRAY_ALPHA: Pillow's "LA" (luma, alpha kept).
  const uint8_t rgba[4] = {10, 200, 30, 77};
  CanonicalImage im{rgba, 4, 1, 1, 4, ElemType::UInt8};
  ImageShape la = output_shape(im, ColorMode::GRAY_ALPHA);
  CHECK(la.channels == 2 && la.type == ElemType::UInt8);
  uint8_t la8[2];
  convert_channels(im, ColorMode::GRAY_ALPHA, la8);
  CHECK(la8[0] == uint8_t((19595 * 10 + 38470 * 200 + 7471 * 30 + 32768) >> 16) && la8[1] == 77);
  // 8 -> 16 bit replicates the byte (v * 257), in every mode; GRAY of grey stays exact.
  CHECK(output_shape(im, ColorMode::RGB, BitDepth::Sixteen).type == ElemType::UInt16);
  CHECK(output_shape(im, ColorMode::UNCHANGED, BitDepth::Sixteen).channels == 4);
  uint16_t rgba16[4];
  convert_channels(im, ColorMode::UNCHANGED, reinterpret_cast<uint8_t*>(rgba16), BitDepth::Sixteen);
  CHECK(rgba16[0] == 10 * 257 && rgba16[1] == 200 * 257 && rgba16[2] == 30 * 257 && rgba16[3] == 77 * 257);
  const uint8_t g1[1] = {255};
  CanonicalImage gray{g1, 1, 1, 1, 1, ElemType::UInt8};
  uint16_t ga16[2];
  convert_channels(gray, ColorMode::GRAY_ALPHA, reinterpret_cast<uint8_t*>(ga16), BitDepth::Sixteen);
  CHECK(ga16[0] == 65535 && ga16[1] == 65535);
  // 16 -> 8 bit with BitDepth::Eight even in UNCHANGED: the high byte.
  const uint16_t w[1] = {0xABCD};
  CanonicalImage wide{reinterpret_cast<const uint8_t*>(w), 2, 1, 1, 1, ElemType::UInt16};
  CHECK(output_shape(wide, ColorMode::UNCHANGED, BitDepth::Eight).type == ElemType::UInt8);
  CHECK(output_shape(wide, ColorMode::UNCHANGED).type == ElemType::UInt16);  // Source keeps 16 bits
  uint8_t narrow[1];
  convert_channels(wide, ColorMode::UNCHANGED, narrow, BitDepth::Eight);
  CHECK(narrow[0] == 0xAB);
}

static Bytes png_chunk(const char* type, const Bytes& payload) {
  Bytes c = {uint8_t(payload.size() >> 24), uint8_t(payload.size() >> 16), uint8_t(payload.size() >> 8),
             uint8_t(payload.size())};
  c.insert(c.end(), type, type + 4);
  c.insert(c.end(), payload.begin(), payload.end());
  c.insert(c.end(), 4, 0);  // CRC: not checked by the metadata reader
  return c;
}

static void test_image_chunks() {
  // The EXIF payload: a TIFF structure with Orientation, optionally behind "Exif\0\0".
  for (bool prefix : {false, true}) {
    Bytes exif = tiff_one_entry(false, kTiffTagOrientation, 3, 6);
    if (prefix) exif.insert(exif.begin(), {'E', 'x', 'i', 'f', 0, 0});
    Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    for (const Bytes& c : {png_chunk("IHDR", Bytes(13)), png_chunk("IDAT", Bytes(5)), png_chunk("eXIf", exif),
                           png_chunk("IEND", {})}) {
      png.insert(png.end(), c.begin(), c.end());
    }
    CHECK(png_exif_orientation(png.data(), png.size()) == 6);
    for (size_t cut = 0; cut < png.size(); ++cut) {  // truncated anywhere: 1 or the value, no over-read
      const Bytes t(png.begin(), png.begin() + long(cut));
      const int o = png_exif_orientation(t.data(), t.size());
      CHECK(o == 1 || o == 6);
    }
    Bytes webp = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'};
    const auto riff = [&](const char* type, const Bytes& payload) {
      webp.insert(webp.end(), type, type + 4);
      for (int i = 0; i < 4; ++i) webp.push_back(uint8_t(payload.size() >> (8 * i)));
      webp.insert(webp.end(), payload.begin(), payload.end());
      if (payload.size() & 1) webp.push_back(0);
    };
    riff("VP8X", Bytes(10));
    riff("VP8L", {0x2F, 0, 0, 0, 0x00});  // alpha_is_used = 0
    riff("EXIF", exif);
    CHECK(webp_exif_orientation(webp.data(), webp.size()) == 6);
    CHECK(!webp_has_alpha(webp.data(), webp.size()));
    webp[20] = 0x10;  // VP8X alpha flag
    CHECK(webp_has_alpha(webp.data(), webp.size()));
  }
}

static void test_gif_frame() {
  // 4x2 screen, a global table of 2 colours, a GCE with transparency index 1, a 2x1 frame at (1, 1).
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 4, 0, 2, 0, 0x80, 0, 0,
                     255, 0, 0, 0, 0, 255,                            // red, blue
                     0x21, 0xF9, 4, 1, 0, 0, 1, 0,                    // GCE: transparent index 1
                     0x2C, 1, 0, 1, 0, 2, 0, 1, 0, 0,                 // image descriptor
                     2, 2, 0x44, 0x01, 0, 0x3B};
  GifFirstFrame f;
  CHECK(read_gif_first_frame(gif.data(), gif.size(), f));
  CHECK(f.screen_width == 4 && f.screen_height == 2 && f.left == 1 && f.top == 1 && f.width == 2 && f.height == 1);
  CHECK(f.transparent_index == 1 && f.palette_size == 2 && f.palette[1][2] == 255);
  // FFmpeg's canvas: all transparent white except frame pixel (1, 1) red and (2, 1) transparent.
  Bytes canvas(4 * 2 * 4, 0);
  for (size_t i = 0; i < canvas.size(); i += 4) canvas[i] = canvas[i + 1] = canvas[i + 2] = 255;
  const uint8_t red[4] = {255, 0, 0, 255};
  std::memcpy(&canvas[(1 * 4 + 1) * 4], red, 4);
  Bytes out(4 * 2 * 4);
  restore_gif_colours(f, canvas.data(), 16, 2, 4, 4, out.data());
  CHECK(out[0] == 0 && out[2] == 255 && out[3] == 0);                       // uncovered: the fill (index 1)
  CHECK(out[(1 * 4 + 1) * 4] == 255 && out[(1 * 4 + 1) * 4 + 3] == 255);    // drawn: red, opaque
  CHECK(out[(1 * 4 + 2) * 4 + 2] == 255 && out[(1 * 4 + 2) * 4 + 3] == 0);  // transparent: blue, alpha 0
  for (size_t cut = 0; cut < gif.size(); ++cut) {  // truncated anywhere: false or a frame, no over-read
    const Bytes t(gif.begin(), gif.begin() + long(cut));
    if (read_gif_first_frame(t.data(), t.size(), f)) CHECK(cut >= 37);
  }
}

static void test_tiff_ifd() {
  uint32_t v = 0;
  for (bool little : {true, false}) {
    Bytes t = tiff_one_entry(little, kTiffTagOrientation, 3, 6);
    CHECK(tiff_ifd0_value(t.data(), t.size(), kTiffTagOrientation, v) && v == 6);
    CHECK(!tiff_ifd0_value(t.data(), t.size(), kTiffTagTileWidth, v));
    Bytes l = tiff_one_entry(little, kTiffTagTileWidth, 4, 0x10000);
    CHECK(tiff_ifd0_value(l.data(), l.size(), kTiffTagTileWidth, v) && v == 0x10000);
    // Every truncation of a valid structure is refused without reading past the end (ASan checks).
    for (size_t n = 0; n < 20; ++n) {  // the SHORT value ends at byte 20
      Bytes cut(t.begin(), t.begin() + long(n));
      CHECK(!tiff_ifd0_value(cut.data(), cut.size(), kTiffTagOrientation, v));
    }
    // Hostile: IFD offset far out of range, and an entry count of 65535 with one real entry.
    Bytes far = t;
    far[4] = far[5] = far[6] = far[7] = 0xFF;
    CHECK(!tiff_ifd0_value(far.data(), far.size(), kTiffTagOrientation, v));
    Bytes many = t;
    many[8] = many[9] = 0xFF;
    CHECK(!tiff_ifd0_value(many.data(), many.size(), 0x9999, v));
    // An undefined type (7) for the tag is refused.
    Bytes undef = tiff_one_entry(little, kTiffTagOrientation, 7, 6);
    CHECK(!tiff_ifd0_value(undef.data(), undef.size(), kTiffTagOrientation, v));
  }
  Bytes bad{'X', 'X', 42, 0, 8, 0, 0, 0};
  CHECK(!tiff_ifd0_value(bad.data(), bad.size(), kTiffTagOrientation, v));
  CHECK(!tiff_ifd0_value(nullptr, 0, kTiffTagOrientation, v));
}

static void test_jpeg_markers() {
  JpegFrameInfo info;
  Bytes h = jpeg_header(640, 480);
  CHECK(jpeg_frame_info(h.data(), h.size(), info) && info.width == 640 && info.height == 480 && info.components == 3);
  CHECK(jpeg_exif_orientation(h.data(), h.size()) == 1);
  for (bool little : {true, false}) {
    Bytes exif = tiff_one_entry(little, kTiffTagOrientation, 3, 6);
    Bytes j = jpeg_header(65535, 65535, &exif);
    CHECK(jpeg_frame_info(j.data(), j.size(), info) && info.width == 65535 && info.height == 65535);
    CHECK(jpeg_exif_orientation(j.data(), j.size()) == 6);
    for (size_t n = 0; n < j.size(); ++n) {  // every truncation: no over-read, a valid answer
      Bytes cut(j.begin(), j.begin() + long(n));
      const int o = jpeg_exif_orientation(cut.data(), cut.size());
      CHECK(o == 1 || o == 6);
      (void)jpeg_frame_info(cut.data(), cut.size(), info);
    }
    Bytes bad = tiff_one_entry(little, kTiffTagOrientation, 3, 9);  // out of range: ignored
    Bytes jb = jpeg_header(8, 8, &bad);
    CHECK(jpeg_exif_orientation(jb.data(), jb.size()) == 1);
  }
  // A segment length running past the end, and a run of 0xFF fill bytes.
  Bytes over{0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 'E', 'x'};
  CHECK(jpeg_exif_orientation(over.data(), over.size()) == 1);
  CHECK(!jpeg_frame_info(over.data(), over.size(), info));
  Bytes fill(4096, 0xFF);
  fill[1] = 0xD8;
  CHECK(!jpeg_frame_info(fill.data(), fill.size(), info));
}

static void test_decode_hostile_synthetic() {
  std::mt19937 rng(1234);
  // Zero bytes, one byte, random bytes: DecodeError.
  CHECK(decode({}, ColorMode::RGB).outcome == Outcome::DecodeErr);
  CHECK(decode({0xFF}, ColorMode::RGB).outcome == Outcome::DecodeErr);
  for (int i = 0; i < 50; ++i) {
    Bytes r(size_t(rng() % 4096));
    for (auto& b : r) b = uint8_t(rng());
    CHECK(decode(r, ColorMode::RGB).outcome == Outcome::DecodeErr);
  }
  // Format magic followed by garbage: DecodeError for every format, in every mode.
  const std::vector<Bytes> magics = {{0xFF, 0xD8, 0xFF}, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A}, {'G', 'I', 'F', '8', '9', 'a'},
                                     {'B', 'M'},         {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'},
                                     {'I', 'I', 42, 0},  {'M', 'M', 0, 42}, {'P', '4', '\n'}, {'P', '5', '\n'}, {'P', '6', '\n'}};
  for (const Bytes& m : magics) {
    for (int i = 0; i < 20; ++i) {
      Bytes r = m;
      r.resize(m.size() + rng() % 512);
      for (size_t k = m.size(); k < r.size(); ++k) r[k] = uint8_t(rng());
      for (ColorMode mode : {ColorMode::RGB, ColorMode::UNCHANGED}) {
        const Result res = decode(r, mode);
        CHECK(res.outcome != Outcome::OtherErr);
        if (res.outcome == Outcome::Ok) {
          CHECK(res.shape.height > 0 && res.shape.width > 0 && res.alloc_calls == 1);
        }
      }
    }
  }
  // A PNG IHDR declaring 3895508491 x 4057349904: the pixel count overflows int64_t (a signed-overflow bug
  // found by this test under UBSan, fixed in ffmpeg_image_decoder.cpp's check_pixels). Must be refused by
  // the limit, naming the exact count.
  {
    Bytes png{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
              0xE8, 0x30, 0xE8, 0x0B, 0xF1, 0xD5, 0xEB, 0x10, 8, 2, 0, 0, 0, 0, 0, 0, 0};
    const Result p = decode(png, ColorMode::RGB);
    CHECK(p.outcome == Outcome::DecodeErr && p.alloc_calls == 0);
    CHECK(p.message.find("15805400857370401200 pixels exceeds the limit") != std::string::npos);
  }
  // JPEG data that ends before any frame header (SOI+EOI, SOI+APP0, a file cut after its APP segments):
  // TurboJPEG 2.1 returns success without a size; found by fuzz_decode_image on a corpus seed. Must be a
  // DecodeError before the allocator is called (it was called with a 0x0 shape).
  for (const Bytes& j : {Bytes{0xFF, 0xD8, 0xFF, 0xD9},
                         Bytes{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}}) {
    for (ColorMode mode : {ColorMode::RGB, ColorMode::UNCHANGED}) {
      const Result t = decode(j, mode);
      CHECK(t.outcome == Outcome::DecodeErr && t.alloc_calls == 0);
      CHECK(t.message.find("no frame header") != std::string::npos);
    }
  }
  // A JPEG header declaring 65535 x 65535: refused by the pixel limit before any allocation.
  Bytes big = jpeg_header(65535, 65535);
  Result r = decode(big, ColorMode::RGB);
  CHECK(r.outcome == Outcome::DecodeErr && r.alloc_calls == 0);
  // Under max_pixels == 0 (no limit) it must still fail cleanly (no data), not allocate 12 GiB.
  r = decode(big, ColorMode::RGB, 0);
  CHECK(r.outcome == Outcome::DecodeErr && r.alloc_calls == 0);
}

// ------------------------------------------------------------------------------------------ batch turns
// Polls cond() until it holds (true) or a generous 10 s pass (false): only a broken build waits that long.
template <typename Cond>
static bool eventually(Cond cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// One gate per item: an item blocks until the test opens its gate.
struct Gates {
  explicit Gates(int n) : open(size_t(n)), started(size_t(n)) {}
  std::vector<std::atomic<bool>> open, started;
  void pass(int64_t i) {
    started[size_t(i)] = true;
    while (!open[size_t(i)]) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
};

static void test_batch_turns() {
  ThreadPool pool(2);
  // First come, first served; a turn is passed on once, by its first release().
  {
    std::vector<int> order;
    std::mutex order_mutex;
    std::atomic<bool> b_go{false};
    BatchTurn first = wait_for_batch_turn(pool);
    CHECK(first.held() && batch_turns_pending(pool) == 1);
    auto waiter = [&](int id, std::atomic<bool>* go) {
      BatchTurn t = wait_for_batch_turn(pool);
      {
        std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(id);
      }
      if (go != nullptr) eventually([&] { return go->load(); });
    };
    std::thread b(waiter, 1, &b_go);
    CHECK(eventually([&] { return batch_turns_pending(pool) == 2; }));
    std::thread c(waiter, 2, nullptr);
    CHECK(eventually([&] { return batch_turns_pending(pool) == 3; }));
    CHECK(order.empty());  // both wait while `first` holds the turn
    first.release();
    first.release();  // idempotent: passes nothing more on
    CHECK(!first.held());
    CHECK(eventually([&] {
      std::lock_guard<std::mutex> lock(order_mutex);
      return !order.empty();
    }));
    CHECK(batch_turns_pending(pool) == 2);  // b holds it until told to go; c still waits
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      CHECK(order == std::vector<int>{1});
    }
    b_go = true;
    b.join();
    c.join();
    CHECK((order == std::vector<int>{1, 2}));
    CHECK(batch_turns_pending(pool) == 0);
  }
  // The turn passes when a worker takes the call's last item, while that item (and others) still run.
  {
    Gates gates(4);
    std::atomic<bool> x_done{false}, b_has_turn{false};
    std::thread x([&] {
      BatchTurn t = wait_for_batch_turn(pool);
      pool.parallel_for({0, 1, 2, 3}, [&](int64_t i) { gates.pass(i); }, [&] { t.release(); });
      x_done = true;
    });
    CHECK(eventually([&] { return batch_turns_pending(pool) == 1; }));
    std::thread b([&] {
      BatchTurn t = wait_for_batch_turn(pool);
      b_has_turn = true;
    });
    CHECK(eventually([&] { return batch_turns_pending(pool) == 2; }));
    CHECK(eventually([&] { return gates.started[0] && gates.started[1]; }));
    CHECK(!b_has_turn && !gates.started[2]);  // both workers are blocked in items 0 and 1: 2 and 3 unclaimed
    gates.open[0] = true;
    CHECK(eventually([&] { return gates.started[2].load(); }));
    CHECK(!b_has_turn);  // item 3 is still unclaimed
    gates.open[1] = true;
    CHECK(eventually([&] { return b_has_turn.load(); }));  // item 3 claimed: the turn moved on...
    CHECK(!x_done && !gates.open[2] && !gates.open[3]);    // ...while items 2 and 3 still run
    gates.open[2] = gates.open[3] = true;
    x.join();
    b.join();
    CHECK(x_done && batch_turns_pending(pool) == 0);
  }
  // An exception stops the items before the last one is claimed: the guard passes the turn on.
  {
    std::atomic<bool> b_has_turn{false};
    BatchTurn hold = wait_for_batch_turn(pool);
    std::thread x([&] {
      try {
        BatchTurn t = wait_for_batch_turn(pool);
        pool.parallel_for({0, 1, 2, 3, 4, 5, 6, 7}, [](int64_t) { throw std::runtime_error("item failed"); },
                          [&] { t.release(); });
      } catch (const std::runtime_error&) {
      }
    });
    CHECK(eventually([&] { return batch_turns_pending(pool) == 2; }));
    std::thread b([&] {
      BatchTurn t = wait_for_batch_turn(pool);
      b_has_turn = true;
    });
    CHECK(eventually([&] { return batch_turns_pending(pool) == 3; }));
    hold.release();
    x.join();
    b.join();
    CHECK(b_has_turn && batch_turns_pending(pool) == 0);
  }
  // A worker of the pool (a nested call, which runs inline) never waits for a turn, even while another
  // call holds it; a single item runs inline, after on_last_claimed; no items: no call.
  {
    BatchTurn hold = wait_for_batch_turn(pool);
    std::atomic<int> nested_without_turn{0};
    pool.parallel_for({0, 1, 2, 3}, [&](int64_t) {
      BatchTurn t = wait_for_batch_turn(pool);
      if (!t.held()) ++nested_without_turn;
    });
    CHECK(nested_without_turn == 4 && batch_turns_pending(pool) == 1);
    std::vector<std::string> events;
    pool.parallel_for({7}, [&](int64_t i) { events.push_back("item " + std::to_string(i)); },
                      [&] { events.push_back("last claimed"); });
    CHECK((events == std::vector<std::string>{"last claimed", "item 7"}));
    int calls = 0;
    pool.parallel_for(std::vector<int64_t>{}, [](int64_t) {}, [&] { ++calls; });
    CHECK(calls == 0);
  }
  // Many callers, each a turn plus a parallel_for that passes it on: all finish, in any interleaving,
  // and every item runs once.
  {
    std::atomic<int64_t> items{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 6; ++c) {
      callers.emplace_back([&, c] {
        for (int r = 0; r < 40; ++r) {
          BatchTurn t = wait_for_batch_turn(pool);
          const int64_t n = (c + r) % 5;  // 0 (no items) to 4, 1 runs inline
          pool.parallel_for(n, [&](int64_t) { ++items; });
          std::vector<int64_t> order(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
          pool.parallel_for(order, [&](int64_t) { ++items; }, [&] { t.release(); });
        }
      });
    }
    for (std::thread& t : callers) t.join();
    int64_t want = 0;
    for (int c = 0; c < 6; ++c) {
      for (int r = 0; r < 40; ++r) want += 2 * ((c + r) % 5);
    }
    CHECK(items == want && batch_turns_pending(pool) == 0);
  }
}

// ------------------------------------------------------------------------------------------------ batch
// decode_batch of one sample into a uint8 CHW slot; returns the reason of a failure ("" on success).
static std::string batch_decode(const Bytes& data, BatchOptions opt, bool partial, Bytes& out) {
  static ThreadPool pool(2);
  opt.partial_decode = partial;
  out.assign(size_t(opt.height * opt.width * 3), 0xAB);
  SlotWriter w;
  w.data = out.data();
  w.stride_c = opt.height * opt.width;
  w.stride_h = opt.width;
  w.stride_w = 1;
  w.height = opt.height;
  w.width = opt.width;
  w.channels = opt.num_output_channels;
  w.gray = opt.gray;
  return decode_batch({SampleInput{data.data(), data.size(), 77}}, opt, {w}, pool)[0];
}

// The partial JPEG decode (crop rows/columns only) gives the same bytes as the whole-image decode, for
// eval, train (with flips) and resize geometry at several DCT scales; both fail alike on bad data except
// that damage below the crop is not read by the partial decode. Returns the number of JPEGs compared.
static int check_partial_decode(const fs::path& p, const Bytes& data) {
  if (data.size() < 2 || data[0] != 0xFF || data[1] != 0xD8) return 0;
  BatchOptions configs[6];
  configs[0].resize_shorter = 64;
  configs[0].height = configs[0].width = 56;
  configs[1].geometry = GeometryMode::Train;
  configs[1].height = 40, configs[1].width = 32, configs[1].hflip_prob = 1.0;
  configs[2].geometry = GeometryMode::Train;
  configs[2].height = configs[2].width = 8, configs[2].dct_min_ratio = 1.0;
  configs[2].filter = ResampleFilter::Bicubic;
  configs[3].geometry = GeometryMode::Resize;
  configs[3].height = 17, configs[3].width = 29;
  // The crop geometries: RandomCrop with padding after a max_size resize, both flips, grey; nearest.
  configs[4].geometry = GeometryMode::RandomCrop;
  configs[4].resize_shorter = 48, configs[4].max_size = 60, configs[4].padding = {3, 1, 0, 2};
  configs[4].pad_if_needed = true, configs[4].height = 52, configs[4].width = 40;
  configs[4].hflip_prob = configs[4].vflip_prob = 1.0, configs[4].gray = GrayRule::Torchvision;
  configs[5].geometry = GeometryMode::Train;
  configs[5].height = 20, configs[5].width = 24, configs[5].filter = ResampleFilter::Nearest;
  configs[5].vflip_prob = 0.5, configs[5].gray = GrayRule::Pillow, configs[5].num_output_channels = 1;
  int compared = 0;
  for (const BatchOptions& opt : configs) {
    Bytes full, partial;
    const std::string full_error = batch_decode(data, opt, false, full);
    const std::string partial_error = batch_decode(data, opt, true, partial);
    if (!full_error.empty()) continue;
    ++compared;
    if (!partial_error.empty() || partial != full) {
      std::fprintf(stderr, "%s: mode %d: partial decode differs from the whole-image decode (%s)\n", p.c_str(),
                   int(opt.geometry), partial_error.c_str());
    }
    CHECK(partial_error.empty() && partial == full);
  }
  return compared > 0 ? 1 : 0;
}

// An arithmetic-coded baseline JPEG (libjpeg's encoder: Pillow and TurboJPEG cannot write one) of a
// height x width gradient with noise.
static Bytes arithmetic_jpeg(int height, int width) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr jerr{};
  cinfo.err = jpeg_std_error(&jerr);  // errors exit the test (our inputs are valid)
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = JDIMENSION(width);
  cinfo.image_height = JDIMENSION(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  cinfo.arith_code = TRUE;
  jpeg_start_compress(&cinfo, TRUE);
  std::mt19937 rng(7);
  std::vector<uint8_t> row(size_t(width) * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width * 3; ++x) row[size_t(x)] = uint8_t((x / 3 + 2 * y + x % 3 * 40 + int(rng() % 31)) & 0xFF);
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_compress(&cinfo);
  Bytes data(out, out + size);
  jpeg_destroy_compress(&cinfo);
  std::free(out);
  return data;
}

// Arithmetic-coded JPEGs decode whole: libjpeg's arithmetic decoder fills zeros without a warning when it
// meets a marker inside the data, so a partial decode returned such a damaged region as good pixels (found
// by an adversarial sweep); only the end of the stream tells.
static void test_arithmetic_jpeg_damage() {
  const Bytes data = arithmetic_jpeg(240, 320);
  BatchOptions eval;  // resize the shorter side to 64, centre crop 56: rows 15..225 of 240
  eval.resize_shorter = 64;
  eval.height = eval.width = 56;
  Bytes full, partial;
  CHECK(batch_decode(data, eval, false, full).empty());
  CHECK(batch_decode(data, eval, true, partial).empty() && partial == full);
  // A marker (DHT) inserted a tenth into the scan: above the crop's rows.
  const uint8_t sos_marker[2] = {0xFF, 0xDA};
  const size_t sos = size_t(std::search(data.begin(), data.end(), std::begin(sos_marker), std::end(sos_marker)) - data.begin());
  CHECK(sos + 4 < data.size());
  const size_t at = sos + (data.size() - sos) / 10;
  Bytes damaged = data;
  const uint8_t dht[2] = {0xFF, 0xC4};
  damaged.insert(damaged.begin() + long(at), std::begin(dht), std::end(dht));
  const std::string full_error = batch_decode(damaged, eval, false, full);
  const std::string partial_error = batch_decode(damaged, eval, true, partial);
  if (partial_error.empty()) std::fprintf(stderr, "arithmetic JPEG with a marker inside its data: partial decode ok\n");
  CHECK(!full_error.empty() && partial_error == full_error);
}

// ------------------------------------------------------------------------------------------------ corpus
// ------------------------------------------------------------------------------- one check each
// The message of what fn() throws as E; "" when it throws nothing, "<other>" for another exception.
template <typename E, typename Fn>
static std::string thrown(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (...) {
    return "<other>";
  }
  return "";
}

// The pixel limit passes at the limit, refuses one pixel more, and computes the count without overflow.
static void test_pixel_limit() {
  using detail::check_pixel_limit;
  CHECK(thrown<DecodeError>([] { check_pixel_limit("JPEG", 12, 10, 120); }).empty());
  CHECK(thrown<DecodeError>([] { check_pixel_limit("JPEG", 12, 10, 119); }) ==
        "JPEG: image of 12x10 = 120 pixels exceeds the limit of 119 pixels (max_pixels)");
  CHECK(thrown<DecodeError>([] { check_pixel_limit("PNG", 120, 1, 0); }).empty());   // 0: no limit
  CHECK(thrown<DecodeError>([] { check_pixel_limit("PNG", 120, 1, -1); }).empty());  // < 0: no limit
  const int64_t side = (int64_t(1) << 32) - 1;  // a PNG header's largest side
  CHECK(thrown<DecodeError>([&] { check_pixel_limit("PNG", side, side, INT64_MAX); }) ==
        "PNG: image of 4294967295x4294967295 = 18446744065119617025 pixels exceeds the limit of " +
            std::to_string(INT64_MAX) + " pixels (max_pixels)");
  CHECK(thrown<DecodeError>([&] { check_pixel_limit("PNG", side, 1, side); }).empty());
  CHECK(!thrown<DecodeError>([&] { check_pixel_limit("PNG", side, 1, side - 1); }).empty());
}

// BatchOptions::validate: the checks (and messages) of the decode_images and random_resized_crop_params ops.
static void test_batch_options_validate() {
  BatchOptions ok;
  ok.height = ok.width = 8;
  CHECK(thrown<InvalidArgument>([&] { ok.validate(); }).empty());
  const auto message = [&](auto change) {
    BatchOptions o = ok;
    change(o);
    return thrown<InvalidArgument>([&] { o.validate(); });
  };
  CHECK(message([](BatchOptions& o) { o.height = 0; }) == "expected height and width >= 1, got 0x8");
  CHECK(message([](BatchOptions& o) { o.width = 65537; }) == "expected height and width <= 65536, got 8x65537");
  CHECK(message([](BatchOptions& o) { o.resize_shorter = -1; }) ==
        "expected resize_shorter >= 0 (0: no resize), got -1");
  CHECK(message([](BatchOptions& o) { o.scale = {0.5, 0.25}; }) ==
        "expected scale = [lo, hi] with 0 < lo <= hi, got [0.5, 0.25]");
  CHECK(message([](BatchOptions& o) { o.scale = {0.5}; }) == "expected scale = [lo, hi] with 0 < lo <= hi, got [0.5]");
  CHECK(message([](BatchOptions& o) { o.ratio = {0, 1}; }) == "expected ratio = [lo, hi] with 0 < lo <= hi, got [0, 1]");
  CHECK(message([](BatchOptions& o) { o.hflip_prob = 1.5; }) == "expected 0 <= hflip_prob <= 1, got 1.5");
  CHECK(message([](BatchOptions& o) { o.mean = {0.5}; }) ==
        "mean/std normalization needs dtype float32 or bfloat16, got uint8");
  CHECK(message([](BatchOptions& o) { o.dct_min_ratio = -1; }) ==
        "expected dct_min_ratio >= 0 (0: no DCT scaling), got -1");
  CHECK(message([](BatchOptions& o) { o.out_type = OutType::Float32, o.mean = {1, 2}; }) ==
        "expected mean with 1 or 3 values (one per RGB channel), got 2");
  CHECK(message([](BatchOptions& o) { o.out_type = OutType::Float32, o.std = {1, 0, 1}; }) ==
        "expected std values != 0, got 0 for channel 1");
  CHECK(message([](BatchOptions& o) { o.out_type = OutType::Float32, o.mean = {0.5}, o.std = {0.25}; }).empty());
  CHECK(thrown<InvalidArgument>([] { parse_geometry_mode("bad"); }) ==
        "expected geometry mode to be one of \"eval\", \"resize\", \"train\", \"random_crop\", got \"bad\"");
  CHECK(thrown<InvalidArgument>([] { parse_resample_filter("lanczos"); }) ==
        "expected interpolation \"bilinear\", \"bicubic\", \"nearest\" or \"nearest_exact\", got \"lanczos\"");
  CHECK(thrown<InvalidArgument>([&] { crop_params(ok, 0, 5, 1); }) == "expected a positive image size, got 0x5");
}

// The geometry pieces: torchvision's Resize size rule with max_size, RandomCrop's offset range,
// torch's nearest index rules, the grey rules and vertical flips in the resample.
static void test_geometry_rules() {
  ResizedSize r = resized_size(90, 50, 40, 50);  // 40 x 72 -> longer 72 > 50: 27 x 50 (int(50 * 40 / 72))
  CHECK(r.height == 50 && r.width == 27);
  r = resized_size(50, 90, 40, 0);
  CHECK(r.height == 40 && r.width == 72);
  r = resized_size(50, 90, 0, 45);  // Resize(None, max_size=45)
  CHECK(r.height == 25 && r.width == 45);
  // 4 x 3000 with max_size 80: int(80 * 4 / 3000) = 0 pixels; torchvision raises, so does the rule
  CHECK(thrown<InvalidArgument>([&] { resized_size(3000, 4, 0, 80); }) ==
        "Resize: max_size 80 makes the 3000x4 image 80x0 (a side of 0 pixels); torchvision raises here too");
  CHECK(thrown<InvalidArgument>([&] { resized_size(4, 3000, 64, 80); }).find("4x3000 image 0x80") != std::string::npos);
  CropRange c = random_crop_range(40, 2, 4, true, 56);  // 46 padded -> +10 per side: 66, 11 offsets
  CHECK(c.padded == 66 && c.pad_lo == 12 && c.offsets == 11);
  c = random_crop_range(40, 0, 0, false, 41);
  CHECK(c.offsets == 0);
  // nearest: floor(o * 10 / 4) = 0, 2, 5, 7; nearest_exact: floor((o + 0.5) * 2.5) = 1, 3, 6, 8
  const AxisWeights n(resize_axis(10, 4), 10, 4, ResampleFilter::Nearest, false);
  const AxisWeights e(resize_axis(10, 4), 10, 4, ResampleFilter::NearestExact, true);
  CHECK(n.start == (std::vector<int64_t>{0, 2, 5, 7}) && n.count == (std::vector<int64_t>(4, 1)));
  CHECK(e.start == (std::vector<int64_t>{8, 6, 3, 1}));  // mirrored
  // Grey of a 1 x 2 image through a 1:1 resample: torchvision truncates, Pillow rounds (its fixed point).
  const uint8_t src[6] = {200, 100, 50, 10, 250, 3};
  for (GrayRule rule : {GrayRule::Torchvision, GrayRule::Pillow}) {
    uint8_t out[2] = {0, 0};
    SlotWriter w;
    w.data = out, w.height = 1, w.width = 2, w.stride_c = 2, w.stride_h = 2, w.stride_w = 1;
    w.channels = 1, w.gray = rule;
    const AxisWeights wy(resize_axis(1, 1), 1, 1, ResampleFilter::Bilinear, false);
    const AxisWeights wx(resize_axis(2, 2), 2, 2, ResampleFilter::Bilinear, false);
    resample_into(src, 1, 2, 6, wy, wx, w);
    const double l0 = 200 * 0.2989 + 100 * 0.587 + 50 * 0.114, l1 = 10 * 0.2989 + 250 * 0.587 + 3 * 0.114;
    if (rule == GrayRule::Torchvision) {
      CHECK(out[0] == uint8_t(l0) && out[1] == uint8_t(l1));
    } else {
      CHECK(out[0] == ((200 * 19595 + 100 * 38470 + 50 * 7471 + 0x8000) >> 16) &&
            out[1] == ((10 * 19595 + 250 * 38470 + 3 * 7471 + 0x8000) >> 16));
    }
  }
  // A vertical flip reverses the rows.
  const uint8_t col[6] = {1, 2, 3, 4, 5, 6};  // 2 x 1 RGB
  uint8_t flipped[6] = {0};
  SlotWriter w;
  w.data = flipped, w.height = 2, w.width = 1, w.stride_c = 2, w.stride_h = 1, w.stride_w = 1;
  const AxisWeights wy(resize_axis(2, 2), 2, 2, ResampleFilter::Bilinear, true);
  const AxisWeights wx(resize_axis(1, 1), 1, 1, ResampleFilter::Bilinear, false);
  resample_into(col, 2, 1, 3, wy, wx, w);
  CHECK(flipped[0] == 4 && flipped[1] == 1 && flipped[2] == 5 && flipped[3] == 2);
}

// A bug (here: a slot that does not match the options) is an InternalError that stops the batch, naming
// the sample, not a bad sample with a zero-filled slot.
static void test_internal_error_is_rethrown() {
  ThreadPool pool(2);
  const Bytes png = arithmetic_jpeg(20, 30);
  BatchOptions opt;
  opt.geometry = GeometryMode::Resize;
  opt.height = opt.width = 8;
  std::vector<Bytes> outs(3, Bytes(8 * 8 * 3, 0xAB));
  std::vector<SlotWriter> slots(3);
  std::vector<SampleInput> inputs;
  for (size_t i = 0; i < 3; ++i) {
    SlotWriter& w = slots[i];
    w.data = outs[i].data();
    w.stride_c = 64, w.stride_h = 8, w.stride_w = 1;
    w.height = w.width = 8;
    inputs.push_back(SampleInput{png.data(), png.size(), 0});
  }
  slots[1].height = 7;  // the resize writes 8 rows: a broken invariant
  int64_t sample = -2;
  std::string what;
  try {
    decode_batch(inputs, opt, slots, pool);
  } catch (const InternalError& e) {
    sample = e.sample();
    what = e.what();
  }
  CHECK(sample == 1 && what == "resample: windows do not match the source or the slot");
  slots[1].height = 8;
  const std::vector<std::string> errors = decode_batch(inputs, opt, slots, pool);
  CHECK(errors == std::vector<std::string>(3));
}

static Bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}


// resample_into's AVX2 path (3 channels, 8 output rows at a time) against the generic code, bit for bit:
// random sources and geometries (eval with padding, crops with flips, up- and downscales, sizes that are
// not multiples of 8), both filters, every output dtype, planar and channels-last slots; then 6 large
// downscales (windows of hundreds of taps) to 1-5 pixel outputs.
static void test_resample_paths() {
  if (!resample_avx2_available()) {
    std::printf("core_test: no AVX2 path on this machine/build; resample path comparison skipped\n");
    return;
  }
  std::mt19937 rng(1234);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int iter = 0; iter < 306; ++iter) {
    // The last 6: large downscales (windows of hundreds of taps) and a 1-pixel output, both filters.
    const bool big = iter >= 300;
    const int64_t h = big ? 700 + 37 * (iter - 300) : uniform(1, 90), w = big ? 900 - 41 * (iter - 300) : uniform(1, 90);
    const int64_t pad = uniform(0, 5);
    const int64_t row_bytes = w * 3 + pad;
    std::vector<uint8_t> src(size_t(h * row_bytes));  // exactly the image: reads past it are ASan errors
    for (auto& v : src) v = uint8_t(uniform(0, 255));
    const int64_t oh = big ? (iter % 2 ? 1 : 5) : uniform(1, 70), ow = big ? (iter % 3 ? 3 : 1) : uniform(1, 70);
    AxisMap my, mx;
    switch (big ? 2 : iter % 3) {
      case 0:  // eval: resize the shorter side, centre crop (zero padding where the crop is larger)
        my = eval_axis(h, w, uniform(1, 80), oh);
        mx = eval_axis(w, h, uniform(1, 80), ow);
        break;
      case 1: {
        const int64_t y0 = uniform(0, h - 1), x0 = uniform(0, w - 1);
        my = crop_axis(h, y0, uniform(1, h - y0), oh);
        mx = crop_axis(w, x0, uniform(1, w - x0), ow);
        break;
      }
      default:
        my = resize_axis(h, oh);
        mx = resize_axis(w, ow);
    }
    const ResampleFilter filter = iter % 2 ? ResampleFilter::Bicubic : ResampleFilter::Bilinear;
    const AxisWeights wy(my, h, oh, filter, false), wx(mx, w, ow, filter, iter % 4 == 1);
    const OutType type = iter % 5 < 2 ? OutType::Float32 : iter % 5 < 4 ? OutType::UInt8 : OutType::BFloat16;
    const int64_t elem = type == OutType::UInt8 ? 1 : type == OutType::Float32 ? 4 : 2;
    const bool channels_last = iter % 7 == 3;
    std::vector<uint8_t> a(size_t(3 * oh * ow * elem) + 64, 0xAB), b = a;
    SlotWriter out;
    out.type = type;
    out.height = oh;
    out.width = ow;
    out.stride_c = channels_last ? 1 : oh * ow;
    out.stride_h = channels_last ? ow * 3 : ow;
    out.stride_w = channels_last ? 3 : 1;
    out.normalize = iter % 3 != 2;
    for (int c = 0; c < 3; ++c) out.mean[c] = 0.4f + 0.05f * float(c), out.std[c] = 0.2f + 0.01f * float(c);
    out.data = a.data() + 1 + (iter % 2) * 3;  // misaligned slots too: the streaming stores align themselves
    if (type != OutType::UInt8) out.data = a.data() + elem * (iter % 8);
    resample_into(src.data(), h, w, row_bytes, wy, wx, out);
    out.data = b.data() + (out.data - a.data());
    resample_into_generic(src.data(), h, w, row_bytes, wy, wx, out);
    CHECK(a == b);
  }
}

static void test_corpus(const fs::path& root, int& files, int& decoded, int& refused, int& jpegs) {
  std::vector<fs::path> paths;
  fs::recursive_directory_iterator it(root, fs::directory_options::follow_directory_symlink), end;
  for (; it != end; ++it) {
    const std::string entry = it->path().filename().string();
    // Hidden: the corpus keeps its unpacked .debs there; video/audio: media_test.cc's (not images).
    if (entry[0] == '.' || (it.depth() == 0 && (entry == "video" || entry == "audio"))) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    const std::string name = p.filename().string();
    const std::string shortname = name.substr(name.rfind("__") == std::string::npos ? 0 : name.rfind("__") + 2);
    if (p.extension() == ".tsv" || p.extension() == ".txt") continue;
    const Bytes data = read_file(p);
    ++files;
    const Result rgb = decode(data, ColorMode::RGB);
    if (rgb.outcome == Outcome::OtherErr) std::fprintf(stderr, "%s: non-DecodeError exception: %s\n", p.c_str(), rgb.message.c_str());
    CHECK(rgb.outcome != Outcome::OtherErr);
    (rgb.outcome == Outcome::Ok ? decoded : refused) += 1;
    if (p.parent_path().filename() == "pngsuite" && shortname[0] == 'x') {
      if (rgb.outcome != Outcome::DecodeErr) std::fprintf(stderr, "%s: corrupted PngSuite file decoded\n", p.c_str());
      CHECK(rgb.outcome == Outcome::DecodeErr);
    }
    for (ColorMode mode :
         {ColorMode::RGB, ColorMode::RGBA, ColorMode::GRAY, ColorMode::GRAY_ALPHA, ColorMode::UNCHANGED}) {
      for (bool orient : {true, false}) {
        const Result r = mode == ColorMode::RGB && orient ? rgb : decode(data, mode, kDefaultMaxPixels, orient);
        if (r.outcome != rgb.outcome) {
          std::fprintf(stderr, "%s: mode %s orient %d: outcome differs from RGB (%s)\n", p.c_str(),
                       color_mode_name(mode), int(orient), r.message.c_str());
        }
        CHECK(r.outcome == rgb.outcome);
        if (r.outcome != Outcome::Ok) {
          CHECK(r.alloc_calls <= 1);
          continue;
        }
        CHECK(r.alloc_calls == 1);
        CHECK(r.shape.height > 0 && r.shape.width > 0);
        CHECK(int64_t(r.shape.height) * r.shape.width <= kDefaultMaxPixels);
        const int want = mode == ColorMode::RGB    ? 3
                         : mode == ColorMode::RGBA ? 4
                         : mode == ColorMode::GRAY ? 1
                         : mode == ColorMode::GRAY_ALPHA ? 2
                                                   : 0;
        if (want) {
          CHECK(r.shape.channels == want && r.shape.type == ElemType::UInt8);
        } else {
          CHECK(r.shape.channels >= 1 && r.shape.channels <= 4);
        }
        // Same pixel count in every mode (orientation may swap height and width).
        CHECK(int64_t(r.shape.height) * r.shape.width == int64_t(rgb.shape.height) * rgb.shape.width);
      }
    }
    // Every file truncated to a few lengths: a DecodeError or an image, never another outcome.
    for (size_t cut : {data.size() / 2, data.size() * 9 / 10, data.size() > 1 ? data.size() - 1 : 0}) {
      const Bytes t(data.begin(), data.begin() + long(cut));
      const Result r = decode(t, ColorMode::RGB);
      CHECK(r.outcome != Outcome::OtherErr);
      check_partial_decode(p, t);
    }
    jpegs += check_partial_decode(p, data);
  }
}

// Seconds in messages: to the microsecond without trailing zeros, six significant digits outside [1e-6, 1e9).
static void test_seconds_text() {
  CHECK(seconds_text(0.0) == "0 s" && seconds_text(-0.0) == "0 s");
  CHECK(seconds_text(0.04) == "0.04 s" && seconds_text(2.0) == "2 s" && seconds_text(-0.5) == "-0.5 s");
  CHECK(seconds_text(123.4567891) == "123.456789 s" && seconds_text(0.000001) == "0.000001 s");
  CHECK(seconds_text(1e300) == "1e+300 s" && seconds_text(-1e-7) == "-1e-07 s" && seconds_text(1e9) == "1e+09 s");
  CHECK(seconds_text(std::nan("")) == "nan s" && seconds_text(-HUGE_VAL) == "-inf s");
}

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  test_orientation();
  test_pixel_convert();
  test_pixel_depth_and_gray_alpha();
  test_image_chunks();
  test_gif_frame();
  test_tiff_ifd();
  test_jpeg_markers();
  test_decode_hostile_synthetic();
  test_resample_paths();
  test_arithmetic_jpeg_damage();
  test_batch_turns();
  test_pixel_limit();
  test_batch_options_validate();
  test_internal_error_is_rethrown();
  test_geometry_rules();
  test_seconds_text();
  int files = 0, decoded = 0, refused = 0, jpegs = 0;
  for (int i = 1; i < argc; ++i) test_corpus(argv[i], files, decoded, refused, jpegs);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("core_test: %d checks, %d failed; corpus: %d files (%d decoded, %d DecodeError) x 6 modes/orientations"
              " + 3 truncations each; partial vs whole JPEG decode compared on %d JPEGs; %.1f s\n", g_checks, g_failures, files, decoded,
              refused, jpegs, s);
  return g_failures == 0 ? 0 : 1;
}
