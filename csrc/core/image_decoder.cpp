#include "image_decoder.h"

#include <string>

#include "errors.h"
#include "detail/ffmpeg_image_decoder.h"
#include "detail/image_format.h"
#include "detail/jpeg_decoder.h"

namespace spdl_torch::core {

void decode_image(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc) {
  if (size == 0) throw DecodeError("empty data (0 bytes): nothing to decode");
  const ImageFormat format = detect_image_format(data, size);
  switch (format) {
    case ImageFormat::JPEG: decode_jpeg(data, size, opt, alloc); return;
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
