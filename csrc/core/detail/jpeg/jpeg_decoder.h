// SPDX-License-Identifier: BSD-3-Clause
// JPEG decoding through libjpeg-turbo's TurboJPEG API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/detail/jpeg/jpeg_types.h"
#include "core/image_types.h"

namespace spdl_torch::core {

// Parses the frame header; throws DecodeError("JPEG: ...") when it is invalid.
JpegHeader read_jpeg_header(const uint8_t* data, size_t size);

// Decodes a whole JPEG into memory from `alloc`, in opt.mode, applying EXIF orientation when asked.
// Settings: accurate integer IDCT (JDCT_ISLOW) and fancy (smooth) chroma upsampling, libjpeg-turbo's
// defaults and Pillow's. CMYK/YCCK data (Adobe, inverted) is converted to RGB as Pillow does.
// Throws DecodeError for corrupt or truncated data (a premature end of the file or of a data segment,
// bad entropy codes), and for images over opt.max_pixels.
void decode_jpeg(const uint8_t* data, size_t size, const DecodeOptions& opt, const OutputAllocator& alloc);

// The factors of tjGetScalingFactors used for downscaling: 1/8, 1/4, 1/2 and 1, ascending.
const std::vector<JpegScale>& jpeg_downscale_factors();

// The factor TurboJPEG's tjDecompress2 uses when asked for the size `scale` gives a width x height image:
// the largest of its factors whose output fits that size. That is `scale` itself but for tiny images,
// where a larger factor rounds up to the same size (3x3 at 1/2 and at 5/8: 2x2) and would give other
// pixels than libjpeg's API at `scale` (the partial decode). The output size is the same either way.
JpegScale tj_effective_scale(int64_t width, int64_t height, JpegScale scale);

// Decodes a (non-CMYK) JPEG as stored (no EXIF orientation) to RGB at DCT scale `scale`: dst receives
// jpeg_scaled_size(height) rows of jpeg_scaled_size(width) * 3 bytes. Only the DCT scaling reduces the work:
// TurboJPEG 2.1 has no partial (cropped) decode, so the whole scaled image is colour-converted.
// Throws DecodeError as decode_jpeg.
void decode_jpeg_rgb_scaled(const uint8_t* data, size_t size, const JpegHeader& header, JpegScale scale,
                            uint8_t* dst);

}  // namespace spdl_torch::core
