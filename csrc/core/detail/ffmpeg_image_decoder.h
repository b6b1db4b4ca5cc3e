// Still-image decoding (PNG, GIF, BMP, WebP, TIFF) through FFmpeg's libavcodec.
#pragma once

#include <cstddef>
#include <cstdint>

#include "image_format.h"
#include "../image_types.h"

namespace spdl_torch::core {

// Decodes the first frame of an encoded still image of `format` into memory from `alloc`, in opt.mode.
// Palette images expand to RGB, or RGBA when the palette has transparency; 16-bit PNG keeps 16 bits only
// in UNCHANGED mode. Throws DecodeError naming the format and FFmpeg's reason when the data is corrupt,
// truncated, over opt.max_pixels, or when the decoder reports any error while decoding.
void decode_with_ffmpeg(ImageFormat format, const uint8_t* data, size_t size, const DecodeOptions& opt,
                        const OutputAllocator& alloc);

}  // namespace spdl_torch::core
