// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the JPEG marker walker (SOFn frame header, EXIF APP1 orientation). Built by `make fuzz`.
// The input is also wrapped after an SOI marker so the fuzzer need not rediscover 0xFFD8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/detail/jpeg/jpeg_markers.h"

using namespace spdl_torch::core;

static void check(const uint8_t* data, size_t size) {
  JpegFrameInfo info;
  if (jpeg_frame_info(data, size, info)) {
    if (info.width < 0 || info.width > 65535 || info.height < 0 || info.height > 65535) abort();
    if (info.components < 0 || info.components > 255) abort();
  }
  const int o = jpeg_exif_orientation(data, size);
  if (o < 1 || o > 8) abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exact-size copy: ASan then flags any read past the end of the input.
  std::vector<uint8_t> exact(data, data + size);
  check(exact.data(), exact.size());
  std::vector<uint8_t> wrapped{0xFF, 0xD8};
  wrapped.insert(wrapped.end(), data, data + size);
  check(wrapped.data(), wrapped.size());
  return 0;
}
