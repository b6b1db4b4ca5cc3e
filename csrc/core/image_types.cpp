// SPDX-License-Identifier: BSD-3-Clause
#include "core/image_types.h"

#include "core/errors.h"

namespace spdl_torch::core {

ColorMode parse_color_mode(const std::string& mode) {
  if (mode == "RGB") return ColorMode::RGB;
  if (mode == "RGBA" || mode == "RGB_ALPHA") return ColorMode::RGBA;
  if (mode == "GRAY") return ColorMode::GRAY;
  if (mode == "GRAY_ALPHA") return ColorMode::GRAY_ALPHA;
  if (mode == "UNCHANGED") return ColorMode::UNCHANGED;
  throw InvalidArgument("expected mode to be one of \"RGB\", \"RGBA\", \"GRAY\", \"GRAY_ALPHA\", \"UNCHANGED\", got \"" +
                        mode + "\"");
}

const char* color_mode_name(ColorMode mode) {
  switch (mode) {
    case ColorMode::RGB: return "RGB";
    case ColorMode::RGBA: return "RGBA";
    case ColorMode::GRAY: return "GRAY";
    case ColorMode::GRAY_ALPHA: return "GRAY_ALPHA";
    case ColorMode::UNCHANGED: return "UNCHANGED";
  }
  return "?";
}

}  // namespace spdl_torch::core
