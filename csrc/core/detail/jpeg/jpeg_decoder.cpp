// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/jpeg/jpeg_decoder.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/detail/jpeg/jpeg_markers.h"
#include "core/detail/jpeg/libjpeg_session.h"
#include "core/detail/pixels/orientation.h"
#include "core/detail/pixels/pixel_convert.h"
#include "core/detail/pixels/pixel_limit.h"
#include "core/errors.h"

namespace spdl_torch::core {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

// A fresh decompressor for every header read and decode, owned by the caller (TurboJPEG handles are not
// thread-safe): a reused one keeps the Huffman and quantization tables of earlier streams and applies them
// to a stream that lacks its own (an "abbreviated" stream): tests/io/test_image_jpeg_warnings.py.
TjHandle new_decompressor() {
  TjHandle handle(tjInitDecompress());
  if (!handle) throw DecodeError(std::string("JPEG: cannot create a decompressor: ") + tjGetErrorStr2(nullptr));
  return handle;
}

// Throws DecodeError with the handle's error text.
[[noreturn]] void fail(tjhandle tj, const std::string& what) {
  throw DecodeError("JPEG: " + what + tjGetErrorStr2(tj));
}

void decompress(const uint8_t* data, size_t size, uint8_t* dst, int width, int height, int pixel_format) {
  TjHandle handle = new_decompressor();
  tjhandle tj = handle.get();
  const int pitch = width * tjPixelSize[pixel_format];
  const auto n = static_cast<unsigned long>(size);
  if (tjDecompress2(tj, data, n, dst, width, pitch, height, pixel_format, TJFLAG_STOPONWARNING) == 0) return;
  // Stopped at the first problem: TurboJPEG reports a fatal error after a warning as a warning and keeps
  // only its last message, so without the stop a harmless warning followed by a fatal error would pass as
  // a success with no pixels written (tests/io/test_image_jpeg_warnings.py).
  if (tjGetErrorCode(tj) == TJERR_FATAL || detail::libjpeg_warning_loses_data(tjGetErrorStr2(tj))) fail(tj, "");
  // The first problem was a warning that loses no pixels (e.g. extraneous bytes before a marker): check the
  // whole stream with libjpeg's API, which sees every message, then decode it through.
  detail::validate_jpeg_stream(data, size);
  handle = new_decompressor();
  tj = handle.get();
  if (tjDecompress2(tj, data, n, dst, width, pitch, height, pixel_format, 0) != 0) {
    if (tjGetErrorCode(tj) == TJERR_FATAL || detail::libjpeg_warning_loses_data(tjGetErrorStr2(tj))) fail(tj, "");
  }
}

// Adobe (inverted) CMYK to RGB with Pillow's arithmetic ("CMYK;I" raw mode, then cmyk2rgb).
void inverted_cmyk_to_rgb(const uint8_t* cmyk, int64_t pixels, uint8_t* rgb) {
  auto muldiv255 = [](int a, int b) {
    int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (int64_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const int nk = cmyk[3];
    for (int c = 0; c < 3; ++c) rgb[c] = uint8_t(nk - muldiv255(255 - cmyk[c], nk));
  }
}

}  // namespace

JpegHeader read_jpeg_header(const uint8_t* data, size_t size) {
  const TjHandle handle = new_decompressor();
  tjhandle tj = handle.get();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  JpegHeader h;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), &width, &height, &subsampling, &colorspace) !=
      0) {
    // TurboJPEG 2.x rejects valid but unusual chroma subsampling (4:1:0, asymmetric factors) in the header
    // call only; libjpeg decodes those, so read the frame header ourselves.
    const std::string reason = tjGetErrorStr2(tj);
    JpegFrameInfo info;
    if (reason.find("subsampling") == std::string::npos || !jpeg_frame_info(data, size, info)) {
      fail(tj, "invalid header: ");
    }
    h.width = info.width;
    h.height = info.height;
    h.gray = info.components == 1;
    h.cmyk = info.components == 4;
    return h;
  }
  if (width <= 0 || height <= 0) {
    // TurboJPEG 2.1 reports success, without a size, for data that ends before any frame header (it reads
    // it as a tables-only stream): without this check a 0x0 image would reach the allocator.
    throw DecodeError("JPEG: invalid header: no frame header (SOF) before the end of the data");
  }
  h.width = width;
  h.height = height;
  h.gray = colorspace == TJCS_GRAY;
  h.cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  return h;
}

void decode_jpeg(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc) {
  const JpegHeader header = read_jpeg_header(data, size);
  detail::check_pixel_limit("JPEG", header.width, header.height, opt.max_pixels);
  const int orientation = opt.apply_exif_orientation ? jpeg_exif_orientation(data, size) : 1;
  const int64_t pixels = int64_t(header.width) * header.height;

  ImageShape stored;
  stored.height = header.height;
  stored.width = header.width;

  if (header.cmyk) {
    std::vector<uint8_t> cmyk(size_t(pixels) * 4);
    decompress(data, size, cmyk.data(), header.width, header.height, TJPF_CMYK);
    std::vector<uint8_t> rgb(size_t(pixels) * 3);
    inverted_cmyk_to_rgb(cmyk.data(), pixels, rgb.data());
    CanonicalImage src{rgb.data(), int64_t(header.width) * 3, header.height, header.width, 3, ElemType::UInt8};
    stored = output_shape(src, opt.mode);
    std::vector<uint8_t> converted(size_t(stored.num_bytes()));
    convert_channels(src, opt.mode, converted.data());
    apply_orientation(converted.data(), stored, orientation, alloc(oriented_shape(stored, orientation)));
    return;
  }

  int pixel_format = TJPF_RGB;
  switch (opt.mode) {
    case ColorMode::RGB: pixel_format = TJPF_RGB; break;
    case ColorMode::RGBA: pixel_format = TJPF_RGBA; break;  // TurboJPEG fills alpha with 0xFF
    case ColorMode::GRAY: pixel_format = TJPF_GRAY; break;  // the luma (Y) plane, as libjpeg's JCS_GRAYSCALE
    case ColorMode::UNCHANGED: pixel_format = header.gray ? TJPF_GRAY : TJPF_RGB; break;
    case ColorMode::GRAY_ALPHA: throw InternalError("decode_jpeg: GRAY_ALPHA is converted by decode_image");
  }
  stored.channels = tjPixelSize[pixel_format];
  if (orientation == 1) {
    decompress(data, size, alloc(stored), header.width, header.height, pixel_format);
    return;
  }
  std::vector<uint8_t> upright(size_t(stored.num_bytes()));
  decompress(data, size, upright.data(), header.width, header.height, pixel_format);
  apply_orientation(upright.data(), stored, orientation, alloc(oriented_shape(stored, orientation)));
}

const std::vector<JpegScale>& jpeg_downscale_factors() {
  // Never destroyed: a decode still running on the pool while static destructors run at process exit reads it.
  static const std::vector<JpegScale>* const factors = new std::vector<JpegScale>([] {
    std::vector<JpegScale> out;
    int count = 0;
    const tjscalingfactor* sf = tjGetScalingFactors(&count);
    for (int i = 0; sf != nullptr && i < count; ++i) {
      // Only 1/2, 1/4, 1/8 (and 1): libjpeg's n/8 IDCTs for other n alias visibly (27-37 dB PSNR against a
      // full-size antialiased resize on photos), as Pillow's draft() also restricts itself to these.
      const bool power_of_two = sf[i].num == 1 && sf[i].denom > 0 && (sf[i].denom & (sf[i].denom - 1)) == 0;
      if (power_of_two || (sf[i].num == sf[i].denom && sf[i].num > 0)) out.push_back({sf[i].num, sf[i].denom});
    }
    if (out.empty()) out.push_back({1, 1});
    std::sort(out.begin(), out.end(), [](const JpegScale& a, const JpegScale& b) { return a.value() < b.value(); });
    return out;
  }());
  return *factors;
}

JpegScale tj_effective_scale(int64_t width, int64_t height, JpegScale scale) {
  const int64_t w = jpeg_scaled_size(width, scale), h = jpeg_scaled_size(height, scale);
  int count = 0;
  const tjscalingfactor* sf = tjGetScalingFactors(&count);
  // tjDecompress2's own search: the factors in this order (largest first), the first that fits.
  for (int i = 0; sf != nullptr && i < count; ++i) {
    const JpegScale f{sf[i].num, sf[i].denom};
    if (f.num > 0 && f.denom > 0 && jpeg_scaled_size(width, f) <= w && jpeg_scaled_size(height, f) <= h) return f;
  }
  return scale;
}

void decode_jpeg_rgb_scaled(const uint8_t* data, size_t size, const JpegHeader& header, JpegScale scale,
                            uint8_t* dst) {
  if (header.cmyk) throw InternalError("JPEG: CMYK data has no scaled RGB decode");
  const int width = int(jpeg_scaled_size(header.width, scale));
  const int height = int(jpeg_scaled_size(header.height, scale));
  decompress(data, size, dst, width, height, TJPF_RGB);
}

}  // namespace spdl_torch::core
