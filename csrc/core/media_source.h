// SPDX-License-Identifier: BSD-3-Clause
// Where a video or audio stream comes from: a file path, or encoded bytes in the caller's memory (read in
// place through a custom AVIO context, never copied). Plain C++, no FFmpeg types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spdl_torch::core {

struct MediaSource {
  std::string path;              // used when data == nullptr
  const uint8_t* data = nullptr;  // the caller's bytes; must stay valid while the source is open
  size_t size = 0;

  static MediaSource from_path(std::string p) {
    MediaSource s;
    s.path = std::move(p);
    return s;
  }
  static MediaSource from_memory(const uint8_t* d, size_t n) {
    MediaSource s;
    s.data = d;
    s.size = n;
    return s;
  }
  bool in_memory() const { return data != nullptr; }
};

}  // namespace spdl_torch::core
