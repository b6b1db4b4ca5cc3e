// SPDX-License-Identifier: BSD-3-Clause
// Reading tags from the first image file directory (IFD0) of TIFF-structured data: TIFF files and EXIF blocks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spdl_torch::core {

constexpr uint32_t kTiffTagOrientation = 0x0112;
constexpr uint32_t kTiffTagTileWidth = 0x0142;

// Finds `tag` in IFD0 of TIFF-structured data (starting at the "II"/"MM" byte-order mark) and reads its
// first value (SHORT, LONG, SSHORT or SLONG; writers disagree on the type of some tags). Returns false when
// the tag is absent, of another type, or the structure is malformed. Every offset is bounds-checked.
bool tiff_ifd0_value(const uint8_t* tiff, size_t size, uint32_t tag, uint32_t& value);

}  // namespace spdl_torch::core
