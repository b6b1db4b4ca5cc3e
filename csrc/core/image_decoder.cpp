// SPDX-License-Identifier: BSD-3-Clause
#include "core/image_decoder.h"

#include <string>
#include <vector>

#include "core/detail/ffmpeg/ffmpeg_image_decoder.h"
#include "core/detail/jpeg/jpeg_decoder.h"
#include "core/detail/parse/image_format.h"
#include "core/detail/pixels/pixel_convert.h"
#include "core/errors.h"

namespace spdl_torch::core {
namespace {

// JPEG is 8-bit RGB or grey: GRAY_ALPHA and 16-bit output are conversions of its GRAY / RGB / UNCHANGED
// decode (so GRAY_ALPHA's grey is GRAY's luma plane).
void decode_jpeg_converted(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc) {
  DecodeOptions eight = opt;
  eight.depth = BitDepth::Source;
  if (opt.mode == ColorMode::GRAY_ALPHA) eight.mode = ColorMode::GRAY;
  std::vector<uint8_t> pixels;
  ImageShape shape;
  decode_jpeg(data, size, eight, [&](const ImageShape& s) {
    shape = s;
    pixels.resize(size_t(s.num_bytes()));
    return pixels.data();
  });
  if (pixels.empty()) throw InternalError("decode_image: the JPEG decoder produced no image");
  const CanonicalImage src{pixels.data(), shape.row_bytes(), shape.height, shape.width, shape.channels, shape.type};
  convert_channels(src, opt.mode, alloc(output_shape(src, opt.mode, opt.depth)), opt.depth);
}

}  // namespace

void decode_image(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc) {
  if (size == 0) throw DecodeError("empty data (0 bytes): nothing to decode");
  const ImageFormat format = detect_image_format(data, size);
  switch (format) {
    case ImageFormat::JPEG:
      if (opt.mode == ColorMode::GRAY_ALPHA || opt.depth == BitDepth::Sixteen) {
        decode_jpeg_converted(data, size, opt, alloc);
      } else {
        decode_jpeg(data, size, opt, alloc);
      }
      return;
    case ImageFormat::Unknown: {
      static const char hex[] = "0123456789abcdef";
      std::string head;
      for (size_t i = 0; i < size && i < 8; ++i) (head += hex[data[i] >> 4]) += hex[data[i] & 15];
      throw DecodeError("unknown image format (" + std::to_string(size) + " bytes starting with 0x" + head +
                        "): expected JPEG, PNG, GIF, BMP, WebP, TIFF or binary PBM/PGM/PPM");
    }
    default: decode_with_ffmpeg(format, data, size, opt, alloc); return;
  }
}

}  // namespace spdl_torch::core
