// JPEG decoding through libjpeg-turbo's TurboJPEG API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "image_types.h"

namespace spdl_torch::core {

struct JpegHeader {
  int width = 0;
  int height = 0;
  bool gray = false;  // single-component (greyscale) JPEG
  bool cmyk = false;  // CMYK or YCCK JPEG (converted to RGB on decode)
};

// Parses the frame header; throws DecodeError("JPEG: ...") when it is invalid.
JpegHeader read_jpeg_header(const uint8_t* data, size_t size);

// Decodes a whole JPEG into memory from `alloc`, in opt.mode, applying EXIF orientation when asked.
// Settings: accurate integer IDCT (JDCT_ISLOW) and fancy (smooth) chroma upsampling, libjpeg-turbo's
// defaults and Pillow's. CMYK/YCCK data (Adobe, inverted) is converted to RGB as Pillow does.
// Throws DecodeError for corrupt or truncated data (a premature end of the file or of a data segment,
// bad entropy codes), and for images over opt.max_pixels.
void decode_jpeg(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc);

}  // namespace spdl_torch::core
