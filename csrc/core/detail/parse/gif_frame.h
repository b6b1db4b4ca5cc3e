// SPDX-License-Identifier: BSD-3-Clause
// The first frame of a GIF as its own blocks describe it: the logical screen, the frame's rectangle, its
// active colour table (local, else global) and transparency index. FFmpeg's GIF decoder composes the
// frame onto an RGBA canvas in which the transparent palette entry and the uncovered screen become
// 0x00FFFFFF (white, alpha 0); restore_gif_colours() gives those pixels their palette colour instead.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

struct GifFirstFrame {
  int screen_width = 0, screen_height = 0;
  int left = 0, top = 0, width = 0, height = 0;  // the frame's rectangle on the screen (may exceed it)
  int transparent_index = -1;                    // -1: the frame has no transparency
  int palette_size = 0;                          // entries in `palette` (0: no colour table at all)
  uint8_t palette[256][3] = {};                  // the active colour table, RGB
};

// Reads the header, the global colour table and the blocks up to the first image descriptor (the last
// graphic control extension before it gives the transparency). Returns false for malformed or truncated
// structure before that descriptor. Every offset is bounds-checked.
bool read_gif_first_frame(const uint8_t* data, size_t size, GifFirstFrame& frame);

// Writes the first frame as Pillow shows it (PIL.GifImagePlugin: a "P" image filled with the transparency
// index, else index 0, with the frame drawn on it) into dst, HWC, `channels` 3 (RGB) or 4 (RGBA: alpha 0
// for the transparent index). `rgba` is FFmpeg's canvas (8-bit R, G, B, A per pixel, rows `row_bytes`
// apart, height x width): inside the frame's rectangle its alpha-0 pixels are the transparent index and
// the others carry their palette colour; outside it, the fill index applies.
void restore_gif_colours(const GifFirstFrame& frame, const uint8_t* rgba, int64_t row_bytes, int height, int width,
                         int channels, uint8_t* dst);

}  // namespace spdl_torch::core
