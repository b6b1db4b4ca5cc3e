// SPDX-License-Identifier: BSD-3-Clause
#include "core/jpeg_info.h"

#include "core/detail/jpeg/jpeg_markers.h"
#include "core/detail/parse/image_format.h"

namespace spdl_torch::core {

bool read_jpeg_info(const uint8_t* data, size_t size, JpegInfo& info, const char** why) {
  const ImageFormat format = detect_image_format(data, size);
  if (format != ImageFormat::JPEG) {
    if (why != nullptr) *why = format == ImageFormat::Unknown ? "unknown image format" : image_format_name(format);
    return false;
  }
  JpegFrameInfo frame;
  if (!jpeg_frame_info(data, size, frame)) {
    if (why != nullptr) *why = "JPEG: no valid frame header (SOFn) before the first scan";
    return false;
  }
  info.stored_height = frame.height;
  info.stored_width = frame.width;
  info.components = frame.components;
  info.orientation = jpeg_exif_orientation(data, size);
  return true;
}

}  // namespace spdl_torch::core
