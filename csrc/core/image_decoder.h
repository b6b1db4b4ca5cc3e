// SPDX-License-Identifier: BSD-3-Clause
// Entry point for decoding one encoded image of any supported format.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/image_types.h"

namespace spdl_torch::core {

// Detects the format from the data's first bytes and decodes it: JPEG through TurboJPEG, PNG, GIF (first
// frame), BMP, WebP, TIFF and binary
// PBM/PGM/PPM through libavcodec. Writes HWC pixels into memory from `alloc`, in opt.mode and opt.depth,
// EXIF-oriented (JPEG, PNG, WebP) when opt.apply_exif_orientation.
// Throws DecodeError (unknown format, corrupt or truncated data, over the pixel limit).
void decode_image(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc);

}  // namespace spdl_torch::core
