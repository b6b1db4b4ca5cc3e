// SPDX-License-Identifier: BSD-3-Clause
// Detects an encoded image's format from its first bytes (never from a file name).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

enum class ImageFormat { Unknown, JPEG, PNG, GIF, BMP, WEBP, TIFF, PBM, PGM, PPM };

ImageFormat detect_image_format(const uint8_t* data, size_t size);
const char* image_format_name(ImageFormat format);

}  // namespace spdl_torch::core

namespace spdl_torch::core {

// Reads width and height in pixels from the header of a PNG, GIF, BMP or WebP file without decoding.
// Returns false when the format has no such cheap header (TIFF) or the header is too short.
bool sniff_image_size(ImageFormat format, const uint8_t* data, size_t size, int64_t& width, int64_t& height);

// True when a PNG's chunk sequence is intact up to and including IEND (no truncation).
bool png_chunks_complete(const uint8_t* data, size_t size);

}  // namespace spdl_torch::core
