// SPDX-License-Identifier: BSD-3-Clause
// Still-image decoding (PNG, GIF, BMP, WebP, TIFF) through FFmpeg's libavcodec.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/detail/parse/image_format.h"
#include "core/image_types.h"

namespace spdl_torch::core {

// Decodes the first frame of an encoded still image of `format` into memory from `alloc`, in opt.mode and
// opt.depth. Palette images expand to RGB, or RGBA when the palette has transparency (GIF: when the first
// frame has a transparency index; its pixels keep their palette colour, as Pillow's); lossless WebP without
// alpha has 3 channels. With opt.apply_exif_orientation, PNG (eXIf chunk) and WebP (EXIF chunk) are turned
// upright as PIL.ImageOps.exif_transpose does. Throws DecodeError naming the format and FFmpeg's reason when the data is corrupt,
// truncated, over opt.max_pixels, or when the decoder reports any error while decoding.
void decode_with_ffmpeg(ImageFormat format, const uint8_t* data, size_t size, const DecodeOptions& opt,
                        const OutputAllocator& alloc);

}  // namespace spdl_torch::core
