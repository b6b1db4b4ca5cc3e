// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/gif_frame.h"

#include <algorithm>
#include <cstring>

namespace spdl_torch::core {
namespace {

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }

// Skips a chain of data sub-blocks (size byte + data, ended by a zero size) starting at pos.
bool skip_sub_blocks(const uint8_t* data, size_t size, size_t& pos) {
  while (pos < size) {
    const size_t n = data[pos];
    ++pos;
    if (n == 0) return true;
    if (n > size - pos) return false;
    pos += n;
  }
  return false;
}

bool read_colour_table(const uint8_t* data, size_t size, size_t& pos, int entries, GifFirstFrame& frame) {
  const size_t bytes = size_t(entries) * 3;
  if (pos > size || bytes > size - pos) return false;
  std::memset(frame.palette, 0, sizeof(frame.palette));
  std::memcpy(frame.palette, data + pos, bytes);
  frame.palette_size = entries;
  pos += bytes;
  return true;
}

}  // namespace

bool read_gif_first_frame(const uint8_t* data, size_t size, GifFirstFrame& frame) {
  frame = GifFirstFrame{};
  if (size < 13 || (std::memcmp(data, "GIF87a", 6) != 0 && std::memcmp(data, "GIF89a", 6) != 0)) return false;
  frame.screen_width = int(le16(data + 6));
  frame.screen_height = int(le16(data + 8));
  size_t pos = 13;
  if (data[10] & 0x80 && !read_colour_table(data, size, pos, 2 << (data[10] & 7), frame)) return false;
  while (pos < size) {
    const uint8_t block = data[pos++];
    if (block == 0x21) {  // extension: label, then sub-blocks
      if (pos >= size) return false;
      const uint8_t label = data[pos++];
      if (label == 0xF9 && pos + 5 <= size && data[pos] >= 4) {  // graphic control extension
        frame.transparent_index = (data[pos + 1] & 1) ? int(data[pos + 4]) : -1;
      }
      if (!skip_sub_blocks(data, size, pos)) return false;
    } else if (block == 0x2C) {  // image descriptor
      if (pos > size || size - pos < 9) return false;
      frame.left = int(le16(data + pos));
      frame.top = int(le16(data + pos + 2));
      frame.width = int(le16(data + pos + 4));
      frame.height = int(le16(data + pos + 6));
      const uint8_t packed = data[pos + 8];
      pos += 9;
      if (packed & 0x80 && !read_colour_table(data, size, pos, 2 << (packed & 7), frame)) return false;
      return true;
    } else {  // the trailer (0x3B) or anything else before an image
      return false;
    }
  }
  return false;
}

void restore_gif_colours(const GifFirstFrame& frame, const uint8_t* rgba, int64_t row_bytes, int height, int width,
                         int channels, uint8_t* dst) {
  const auto colour = [&](int index, uint8_t* d) {
    if (index >= 0 && index < frame.palette_size) {
      std::memcpy(d, frame.palette[index], 3);
    } else {
      std::memset(d, 0, 3);  // an index past the colour table: Pillow's palette is black there
    }
  };
  const int fill = frame.transparent_index >= 0 ? frame.transparent_index : 0;
  const uint8_t fill_alpha = frame.transparent_index >= 0 ? 0 : 0xFF;
  uint8_t fill_px[4], transparent_px[4];
  colour(fill, fill_px);
  fill_px[3] = fill_alpha;
  colour(frame.transparent_index, transparent_px);
  transparent_px[3] = 0;
  const int x0 = std::clamp(frame.left, 0, width), x1 = std::clamp(frame.left + frame.width, 0, width);
  const int y0 = std::clamp(frame.top, 0, height), y1 = std::clamp(frame.top + frame.height, 0, height);
  for (int y = 0; y < height; ++y) {
    const uint8_t* s = rgba + y * row_bytes;
    uint8_t* d = dst + int64_t(y) * width * channels;
    const bool row_inside = y >= y0 && y < y1;
    for (int x = 0; x < width; ++x, s += 4, d += channels) {
      const uint8_t* px = s;
      if (!row_inside || x < x0 || x >= x1) {
        px = fill_px;
      } else if (s[3] == 0) {
        px = transparent_px;
      }
      std::memcpy(d, px, size_t(channels));
    }
  }
}

}  // namespace spdl_torch::core
