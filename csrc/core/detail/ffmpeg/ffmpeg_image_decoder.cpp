// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/ffmpeg_image_decoder.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/intreadwrite.h>
#include <libavutil/pixdesc.h>
}

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/detail/ffmpeg/ffmpeg_utils.h"
#include "core/detail/parse/gif_frame.h"
#include "core/detail/parse/image_chunks.h"
#include "core/detail/parse/tiff_ifd.h"
#include "core/detail/pixels/orientation.h"
#include "core/detail/pixels/pixel_convert.h"
#include "core/detail/pixels/pixel_limit.h"
#include "core/errors.h"

namespace spdl_torch::core {
namespace {

using namespace detail;

class ImageDecodeFailure {
 public:
  explicit ImageDecodeFailure(ImageFormat format) : format_(format) {}

  [[noreturn]] void raise(const std::string& what, int errnum = 0) const {
    std::string message = std::string(image_format_name(format_)) + ": " + what;
    if (errnum != 0) message += ": " + ffmpeg_error_string(errnum);
    const std::string log = ffmpeg_log();
    if (!log.empty()) message += " (" + log + ")";
    throw DecodeError(message);
  }

 private:
  ImageFormat format_;
};

AVCodecID codec_for(ImageFormat format) {
  switch (format) {
    case ImageFormat::PNG: return AV_CODEC_ID_PNG;
    case ImageFormat::GIF: return AV_CODEC_ID_GIF;
    case ImageFormat::BMP: return AV_CODEC_ID_BMP;
    case ImageFormat::WEBP: return AV_CODEC_ID_WEBP;
    case ImageFormat::TIFF: return AV_CODEC_ID_TIFF;
    case ImageFormat::PBM: return AV_CODEC_ID_PBM;
    case ImageFormat::PGM: return AV_CODEC_ID_PGM;
    case ImageFormat::PPM: return AV_CODEC_ID_PPM;
    default: return AV_CODEC_ID_NONE;
  }
}

// A frame in one of the canonical layouts, pointing into the frame or into `storage`.
struct Canonical {
  CanonicalImage image;
  std::vector<uint8_t> storage;
};

Canonical direct(const AVFrame* f, int channels) {
  Canonical c;
  c.image = {f->data[0], f->linesize[0], f->height, f->width, channels, ElemType::UInt8};
  return c;
}

Canonical allocate(int height, int width, int channels, ElemType type) {
  Canonical c;
  c.image.height = height;
  c.image.width = width;
  c.image.channels = channels;
  c.image.type = type;
  c.image.row_bytes = int64_t(width) * channels * elem_size(type);
  c.storage.resize(size_t(c.image.row_bytes * height));
  c.image.data = c.storage.data();
  return c;
}

Canonical allocate(const AVFrame* f, int channels, ElemType type) {
  return allocate(f->height, f->width, channels, type);
}

// 8-bit packed formats whose channels are a permutation (or subset) of RGBA.
Canonical reorder8(const AVFrame* f, int in_bytes, int out_channels, const int (&order)[4]) {
  Canonical c = allocate(f, out_channels, ElemType::UInt8);
  for (int y = 0; y < f->height; ++y) {
    const uint8_t* s = f->data[0] + int64_t(y) * f->linesize[0];
    uint8_t* d = c.storage.data() + y * c.image.row_bytes;
    for (int x = 0; x < f->width; ++x, s += in_bytes, d += out_channels) {
      for (int k = 0; k < out_channels; ++k) d[k] = s[order[k]];
    }
  }
  return c;
}

Canonical wide16(const AVFrame* f, int channels, bool big_endian) {
  Canonical c = allocate(f, channels, ElemType::UInt16);
  for (int y = 0; y < f->height; ++y) {
    const uint8_t* s = f->data[0] + int64_t(y) * f->linesize[0];
    uint16_t* d = reinterpret_cast<uint16_t*>(c.storage.data() + y * c.image.row_bytes);
    for (int i = 0; i < f->width * channels; ++i, s += 2) d[i] = big_endian ? AV_RB16(s) : AV_RL16(s);
  }
  return c;
}

Canonical palette(const AVFrame* f) {
  const uint32_t* pal = reinterpret_cast<const uint32_t*>(f->data[1]);  // 256 x native-endian 0xAARRGGBB
  bool alpha = false;
  for (int i = 0; i < 256; ++i) alpha |= (pal[i] >> 24) != 0xFF;
  const int channels = alpha ? 4 : 3;
  Canonical c = allocate(f, channels, ElemType::UInt8);
  for (int y = 0; y < f->height; ++y) {
    const uint8_t* s = f->data[0] + int64_t(y) * f->linesize[0];
    uint8_t* d = c.storage.data() + y * c.image.row_bytes;
    for (int x = 0; x < f->width; ++x, d += channels) {
      const uint32_t v = pal[s[x]];
      d[0] = uint8_t(v >> 16);
      d[1] = uint8_t(v >> 8);
      d[2] = uint8_t(v);
      if (alpha) d[3] = uint8_t(v >> 24);
    }
  }
  return c;
}

Canonical monochrome(const AVFrame* f, bool zero_is_white) {
  Canonical c = allocate(f, 1, ElemType::UInt8);
  for (int y = 0; y < f->height; ++y) {
    const uint8_t* s = f->data[0] + int64_t(y) * f->linesize[0];
    uint8_t* d = c.storage.data() + y * c.image.row_bytes;
    for (int x = 0; x < f->width; ++x) {
      const bool bit = (s[x >> 3] >> (7 - (x & 7))) & 1;
      d[x] = (bit != zero_is_white) ? 0xFF : 0x00;
    }
  }
  return c;
}

// Any other pixel format: converted by libswscale to GRAY8, RGB24 or RGBA (BT.601, accurate rounding).
Canonical via_swscale(const AVFrame* f, const ImageDecodeFailure& fail) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(AVPixelFormat(f->format));
  if (!desc) fail.raise("the decoder returned an unknown pixel format");
  const bool has_alpha = desc->flags & AV_PIX_FMT_FLAG_ALPHA;
  const bool gray = desc->nb_components <= 2 && !(desc->flags & AV_PIX_FMT_FLAG_PAL);
  const AVPixelFormat target = gray ? AV_PIX_FMT_GRAY8 : (has_alpha ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24);
  const int channels = gray ? 1 : (has_alpha ? 4 : 3);
  SwsContextPtr sws(sws_getContext(f->width, f->height, AVPixelFormat(f->format), f->width, f->height, target,
                                   SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr, nullptr));
  if (!sws) fail.raise(std::string("cannot convert pixel format ") + desc->name);
  Canonical c = allocate(f, channels, ElemType::UInt8);
  uint8_t* dst[4] = {c.storage.data(), nullptr, nullptr, nullptr};
  int dst_stride[4] = {int(c.image.row_bytes), 0, 0, 0};
  if (sws_scale(sws.get(), f->data, f->linesize, 0, f->height, dst, dst_stride) != f->height) {
    fail.raise(std::string("cannot convert pixel format ") + desc->name);
  }
  return c;
}

Canonical canonicalize(const AVFrame* f, const ImageDecodeFailure& fail) {
  static const int kBGR[4] = {2, 1, 0, 3}, kARGB[4] = {1, 2, 3, 0}, kABGR[4] = {3, 2, 1, 0},
                   kRGB[4] = {0, 1, 2, 3};
  switch (f->format) {
    case AV_PIX_FMT_GRAY8: return direct(f, 1);
    case AV_PIX_FMT_YA8: return direct(f, 2);
    case AV_PIX_FMT_RGB24: return direct(f, 3);
    case AV_PIX_FMT_RGBA: return direct(f, 4);
    case AV_PIX_FMT_BGR24: return reorder8(f, 3, 3, kBGR);
    case AV_PIX_FMT_BGRA: return reorder8(f, 4, 4, kBGR);
    case AV_PIX_FMT_ARGB: return reorder8(f, 4, 4, kARGB);
    case AV_PIX_FMT_ABGR: return reorder8(f, 4, 4, kABGR);
    case AV_PIX_FMT_RGB0: return reorder8(f, 4, 3, kRGB);
    case AV_PIX_FMT_BGR0: return reorder8(f, 4, 3, kBGR);
    case AV_PIX_FMT_0RGB: return reorder8(f, 4, 3, kARGB);
    case AV_PIX_FMT_0BGR: return reorder8(f, 4, 3, kABGR);
    case AV_PIX_FMT_GRAY16BE: return wide16(f, 1, true);
    case AV_PIX_FMT_GRAY16LE: return wide16(f, 1, false);
    case AV_PIX_FMT_YA16BE: return wide16(f, 2, true);
    case AV_PIX_FMT_YA16LE: return wide16(f, 2, false);
    case AV_PIX_FMT_RGB48BE: return wide16(f, 3, true);
    case AV_PIX_FMT_RGB48LE: return wide16(f, 3, false);
    case AV_PIX_FMT_RGBA64BE: return wide16(f, 4, true);
    case AV_PIX_FMT_RGBA64LE: return wide16(f, 4, false);
    case AV_PIX_FMT_PAL8: return palette(f);
    case AV_PIX_FMT_MONOWHITE: return monochrome(f, true);
    case AV_PIX_FMT_MONOBLACK: return monochrome(f, false);
    default: return via_swscale(f, fail);
  }
}

void check_pixels(ImageFormat format, int64_t width, int64_t height, int64_t max_pixels) {
  if (width <= 0 || height <= 0) {
    throw DecodeError(std::string(image_format_name(format)) + ": invalid image size " + std::to_string(width) +
                      "x" + std::to_string(height));
  }
  check_pixel_limit(image_format_name(format), width, height, max_pixels);
}

AVFramePtr decode_first_frame(ImageFormat format, const uint8_t* data, size_t size, int64_t max_pixels,
                              const ImageDecodeFailure& fail) {
  const AVCodec* codec = avcodec_find_decoder(codec_for(format));
  if (!codec) fail.raise("this FFmpeg build has no decoder for the format");
  AVCodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) fail.raise("cannot allocate a decoder context", AVERROR(ENOMEM));
  ctx->thread_count = 1;  // parallelism comes from decoding many images at once
  // PNG: verify chunk CRCs and fail on any inconsistency, as libpng does. Other formats keep FFmpeg's
  // defaults (TIFF with AV_EF_EXPLODE would reject files that merely carry tags it does not know).
  if (format == ImageFormat::PNG) ctx->err_recognition = AV_EF_CRCCHECK | AV_EF_EXPLODE;
  if (max_pixels > 0) ctx->max_pixels = max_pixels;
  int ret = avcodec_open2(ctx.get(), codec, nullptr);
  if (ret < 0) fail.raise("cannot open the decoder", ret);

  if (size > size_t(INT_MAX - AV_INPUT_BUFFER_PADDING_SIZE)) fail.raise("the encoded data is larger than 2 GiB");
  AVPacketPtr packet(av_packet_alloc());
  if (!packet || av_new_packet(packet.get(), int(size)) < 0) fail.raise("cannot allocate a packet", AVERROR(ENOMEM));
  std::memcpy(packet->data, data, size);  // av_new_packet zero-fills the padding the decoders read past the end

  AVFramePtr frame(av_frame_alloc());
  if (!frame) fail.raise("cannot allocate a frame", AVERROR(ENOMEM));
  ret = avcodec_send_packet(ctx.get(), packet.get());
  if (ret < 0) fail.raise("invalid data", ret);
  ret = avcodec_receive_frame(ctx.get(), frame.get());
  if (ret == AVERROR(EAGAIN)) {
    avcodec_send_packet(ctx.get(), nullptr);  // flush: some decoders emit the frame only at end of stream
    ret = avcodec_receive_frame(ctx.get(), frame.get());
  }
  if (ret == AVERROR_EOF || ret == AVERROR(EAGAIN)) fail.raise("the data holds no complete image");
  if (ret < 0) fail.raise("invalid data", ret);
  if (!ffmpeg_log().empty()) fail.raise("the decoder reported an error");
  if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT)) fail.raise("the image is corrupt");
  return frame;
}

// The file's own channels where FFmpeg's output format has more: GIF's canvas is always RGBA, lossless WebP
// always ARGB. GIF pixels take their palette colours (see gif_frame.h).
Canonical own_channels(ImageFormat format, const uint8_t* data, size_t size, Canonical c) {
  if (c.image.channels != 4 || c.image.type != ElemType::UInt8) return c;
  const CanonicalImage& in = c.image;
  GifFirstFrame gif;
  if (format == ImageFormat::GIF && read_gif_first_frame(data, size, gif)) {
    Canonical out = allocate(in.height, in.width, gif.transparent_index >= 0 ? 4 : 3, ElemType::UInt8);
    restore_gif_colours(gif, in.data, in.row_bytes, in.height, in.width, out.image.channels, out.storage.data());
    return out;
  }
  if (format == ImageFormat::WEBP && !webp_has_alpha(data, size)) {
    Canonical out = allocate(in.height, in.width, 3, ElemType::UInt8);
    for (int y = 0; y < in.height; ++y) {
      const uint8_t* s = in.data + y * in.row_bytes;
      uint8_t* d = out.storage.data() + y * out.image.row_bytes;
      for (int x = 0; x < in.width; ++x, s += 4, d += 3) std::memcpy(d, s, 3);
    }
    return out;
  }
  return c;
}

int exif_orientation_of(ImageFormat format, const uint8_t* data, size_t size) {
  switch (format) {
    case ImageFormat::PNG: return png_exif_orientation(data, size);
    case ImageFormat::WEBP: return webp_exif_orientation(data, size);
    default: return 1;
  }
}

}  // namespace

void decode_with_ffmpeg(ImageFormat format, const uint8_t* data, size_t size, const DecodeOptions& opt,
                        const OutputAllocator& alloc) {
  install_ffmpeg_log_capture();
  clear_ffmpeg_log();
  const ImageDecodeFailure fail(format);
  int64_t width = 0, height = 0;
  if (sniff_image_size(format, data, size, width, height)) check_pixels(format, width, height, opt.max_pixels);
  if (format == ImageFormat::PNG && !png_chunks_complete(data, size)) {
    fail.raise("truncated or corrupt chunk structure: no complete IEND chunk");
  }
  uint32_t tile_width = 0;
  if (format == ImageFormat::TIFF && tiff_ifd0_value(data, size, kTiffTagTileWidth, tile_width)) {
    // FFmpeg's TIFF decoder returns a black image for tiled (non-DNG) TIFF without reporting an error.
    fail.raise("tiled TIFF is not supported (FFmpeg's TIFF decoder reads strips only)");
  }
  AVFramePtr frame = decode_first_frame(format, data, size, opt.max_pixels, fail);
  check_pixels(format, frame->width, frame->height, opt.max_pixels);
  const Canonical canonical = own_channels(format, data, size, canonicalize(frame.get(), fail));
  const int orientation = opt.apply_exif_orientation ? exif_orientation_of(format, data, size) : 1;
  const ImageShape stored = output_shape(canonical.image, opt.mode, opt.depth);
  if (orientation == 1) {
    convert_channels(canonical.image, opt.mode, alloc(stored), opt.depth);
    return;
  }
  std::vector<uint8_t> upright(size_t(stored.num_bytes()));
  convert_channels(canonical.image, opt.mode, upright.data(), opt.depth);
  apply_orientation(upright.data(), stored, orientation, alloc(oriented_shape(stored, orientation)));
}

}  // namespace spdl_torch::core
