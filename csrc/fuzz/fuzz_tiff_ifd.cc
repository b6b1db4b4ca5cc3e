// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the TIFF IFD0 reader used for EXIF blocks and TIFF files. Built by `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/detail/parse/tiff_ifd.h"

using namespace spdl_torch::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> exact(data, data + size);  // exact-size heap copy: over-reads are caught
  static const uint32_t tags[] = {kTiffTagOrientation, kTiffTagTileWidth, 0x0100, 0x0101, 0x8769, 0xFFFF};
  for (uint32_t tag : tags) {
    uint32_t value = 0;
    (void)tiff_ifd0_value(exact.data(), exact.size(), tag, value);
  }
  return 0;
}
