// SPDX-License-Identifier: BSD-3-Clause
// Ogg page headers read straight from the bytes (RFC 3533), for one question libavformat does not answer:
// whether a file is a single logical stream or a chain of them (each chain restarts its granule
// positions, so a seek by timestamp lands in the wrong chain). Every offset is bounds-checked; anything
// unreadable or malformed answers "not known single". Internal header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/media_source.h"

namespace spdl_torch::core::detail {

// The serial number of the page header at data[0], or -1 when there is none.
int64_t ogg_page_serial(const uint8_t* data, size_t size);

// The serial number of the last complete page header in `tail` (the end of a file), or -1.
int64_t ogg_last_page_serial(const uint8_t* tail, size_t size);

// Whether `source`'s first and last pages belong to the same logical stream (an unchained file). Reads the
// first page header and at most the last 64 KiB. False when the source cannot be read or has no pages.
bool ogg_single_chain(const MediaSource& source);

}  // namespace spdl_torch::core::detail
