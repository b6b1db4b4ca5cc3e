// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/ogg_pages.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace spdl_torch::core::detail {
namespace {

constexpr size_t kHeader = 27;  // "OggS", version, flags, granule (8), serial (4), sequence (4), CRC (4), segments
constexpr size_t kTail = 64 * 1024;

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// The page's total length (header, segment table, body) when a valid header starts at data[0], else 0.
size_t page_length(const uint8_t* data, size_t size) {
  if (size < kHeader || std::memcmp(data, "OggS", 4) != 0 || data[4] != 0) return 0;
  const size_t segments = data[26];
  if (size < kHeader + segments) return 0;
  size_t body = 0;
  for (size_t i = 0; i < segments; ++i) body += data[kHeader + i];
  return kHeader + segments + body;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

int64_t ogg_page_serial(const uint8_t* data, size_t size) {
  return page_length(data, size) == 0 ? -1 : int64_t(le32(data + 14));
}

int64_t ogg_last_page_serial(const uint8_t* tail, size_t size) {
  // The last "OggS" whose page fits exactly or within the tail (a capture pattern inside a body cannot pass
  // for a header whose length runs past the end).
  for (size_t i = size >= kHeader ? size - kHeader + 1 : 0; i-- > 0;) {
    const size_t len = page_length(tail + i, size - i);
    if (len != 0 && len <= size - i) return int64_t(le32(tail + i + 14));
  }
  return -1;
}

bool ogg_single_chain(const MediaSource& source) {
  std::vector<uint8_t> head(kHeader), tail;
  if (source.in_memory()) {
    if (source.size < kHeader) return false;
    std::memcpy(head.data(), source.data, kHeader);
    const size_t n = std::min(source.size, kTail);
    tail.assign(source.data + source.size - n, source.data + source.size);
  } else {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(source.path.c_str(), "rb"));
    if (!f || std::fread(head.data(), 1, kHeader, f.get()) != kHeader) return false;
    if (std::fseek(f.get(), 0, SEEK_END) != 0) return false;
    const long size = std::ftell(f.get());
    if (size < long(kHeader)) return false;
    const size_t n = std::min(size_t(size), kTail);
    if (std::fseek(f.get(), long(size_t(size) - n), SEEK_SET) != 0) return false;
    tail.resize(n);
    if (std::fread(tail.data(), 1, n, f.get()) != n) return false;
  }
  // Only the header's fixed part is needed for the serial; page_length wants the segment table too.
  if (std::memcmp(head.data(), "OggS", 4) != 0 || head[4] != 0) return false;
  const int64_t first = int64_t(le32(head.data() + 14));
  return ogg_last_page_serial(tail.data(), tail.size()) == first;
}

}  // namespace spdl_torch::core::detail
