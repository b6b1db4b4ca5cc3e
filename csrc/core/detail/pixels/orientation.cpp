// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/pixels/orientation.h"

#include <cstring>
#include <utility>

namespace spdl_torch::core {

ImageShape oriented_shape(const ImageShape& stored, int orientation) {
  ImageShape out = stored;
  if (orientation_swaps_axes(orientation)) std::swap(out.height, out.width);
  return out;
}

void apply_orientation(const uint8_t* src, const ImageShape& stored, int orientation, uint8_t* dst) {
  const int64_t px = int64_t(stored.channels) * elem_size(stored.type);
  const int64_t row = stored.row_bytes();
  const int64_t last_row = int64_t(stored.height - 1) * row;
  const int64_t last_col = int64_t(stored.width - 1) * px;
  // Source byte offset of destination pixel (y, x) is base + y * step_y + x * step_x.
  int64_t base = 0, step_y = row, step_x = px;
  switch (orientation) {
    case 2: base = last_col; step_y = row; step_x = -px; break;
    case 3: base = last_row + last_col; step_y = -row; step_x = -px; break;
    case 4: base = last_row; step_y = -row; step_x = px; break;
    case 5: base = 0; step_y = px; step_x = row; break;
    case 6: base = last_row; step_y = px; step_x = -row; break;
    case 7: base = last_row + last_col; step_y = -px; step_x = -row; break;
    case 8: base = last_col; step_y = -px; step_x = row; break;
    default: std::memcpy(dst, src, size_t(stored.num_bytes())); return;
  }
  const ImageShape out = oriented_shape(stored, orientation);
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* s = src + base + y * step_y;
    uint8_t* d = dst + y * out.row_bytes();
    for (int x = 0; x < out.width; ++x, s += step_x, d += px) std::memcpy(d, s, size_t(px));
  }
}

}  // namespace spdl_torch::core
