// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/pixels/pixel_limit.h"

#include <string>

#include "core/errors.h"

namespace spdl_torch::core::detail {

void check_pixel_limit(const char* format, int64_t width, int64_t height, int64_t max_pixels) {
  const uint64_t pixels = uint64_t(width) * uint64_t(height);
  if (max_pixels > 0 && pixels > uint64_t(max_pixels)) {
    throw DecodeError(std::string(format) + ": image of " + std::to_string(width) + "x" + std::to_string(height) +
                      " = " + std::to_string(pixels) + " pixels exceeds the limit of " + std::to_string(max_pixels) +
                      " pixels (max_pixels)");
  }
}

}  // namespace spdl_torch::core::detail
