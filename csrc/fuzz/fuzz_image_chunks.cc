// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the container metadata readers that run before and after FFmpeg's decode: PNG eXIf and
// WebP EXIF orientation, the WebP alpha flag, the GIF first-frame reader and its colour restoration.
// Built by `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/detail/parse/gif_frame.h"
#include "core/detail/parse/image_chunks.h"

using namespace spdl_torch::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> exact(data, data + size);  // exact-size heap copy: over-reads are caught
  const int png = png_exif_orientation(exact.data(), exact.size());
  const int webp = webp_exif_orientation(exact.data(), exact.size());
  if (png < 1 || png > 8 || webp < 1 || webp > 8) abort();
  (void)webp_has_alpha(exact.data(), exact.size());
  GifFirstFrame gif;
  if (read_gif_first_frame(exact.data(), exact.size(), gif)) {
    if (gif.palette_size < 0 || gif.palette_size > 256 || gif.transparent_index > 255) abort();
    // A small canvas, as FFmpeg would give it (the screen size capped): every frame rectangle must be
    // clipped to it.
    const int h = gif.screen_height % 64 + 1, w = gif.screen_width % 64 + 1;
    std::vector<uint8_t> canvas(size_t(h) * w * 4);
    for (size_t i = 0; i < canvas.size(); ++i) canvas[i] = uint8_t(i * 37);
    for (int channels : {3, 4}) {
      std::vector<uint8_t> out(size_t(h) * w * channels);
      restore_gif_colours(gif, canvas.data(), int64_t(w) * 4, h, w, channels, out.data());
    }
  }
  return 0;
}
