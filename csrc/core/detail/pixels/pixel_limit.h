// SPDX-License-Identifier: BSD-3-Clause
// The decoded-pixel limit (DecodeOptions::max_pixels, BatchOptions::max_pixels), checked in one place by
// every decoder before it allocates.
#pragma once

#include <cstdint>

namespace spdl_torch::core::detail {

// Throws DecodeError("<format>: image of WxH = N pixels exceeds the limit of M pixels (max_pixels)") when
// max_pixels > 0 and width * height > max_pixels. The product is computed in 64 unsigned bits, so sides up
// to 2^32 - 1 each (a PNG header's) never overflow. Sides must be >= 0 (callers reject others first).
void check_pixel_limit(const char* format, int64_t width, int64_t height, int64_t max_pixels);

}  // namespace spdl_torch::core::detail
