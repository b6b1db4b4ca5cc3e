// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/parse/tiff_ifd.h"

#include <cstring>

namespace spdl_torch::core {
namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  bool little;

  bool u16(size_t off, uint32_t& v) const {
    if (off > n || n - off < 2) return false;
    v = little ? (p[off] | p[off + 1] << 8) : (p[off] << 8 | p[off + 1]);
    return true;
  }
  bool u32(size_t off, uint32_t& v) const {
    if (off > n || n - off < 4) return false;
    uint32_t a = p[off], b = p[off + 1], c = p[off + 2], d = p[off + 3];
    v = little ? (a | b << 8 | c << 16 | d << 24) : (a << 24 | b << 16 | c << 8 | d);
    return true;
  }
};

constexpr uint32_t kTypeShort = 3, kTypeLong = 4, kTypeSShort = 8, kTypeSLong = 9;

}  // namespace

bool tiff_ifd0_value(const uint8_t* tiff, size_t size, uint32_t tag, uint32_t& value) {
  if (size < 8) return false;
  Reader r{tiff, size, false};
  if (std::memcmp(tiff, "II", 2) == 0) {
    r.little = true;
  } else if (std::memcmp(tiff, "MM", 2) != 0) {
    return false;
  }
  uint32_t magic = 0, ifd = 0, count = 0;
  if (!r.u16(2, magic) || magic != 42 || !r.u32(4, ifd) || !r.u16(ifd, count)) return false;
  for (uint32_t i = 0; i < count; ++i) {  // each entry: tag u16, type u16, count u32, value/offset u32
    const size_t entry = size_t(ifd) + 2 + size_t(i) * 12;
    uint32_t entry_tag = 0, type = 0;
    if (!r.u16(entry, entry_tag) || !r.u16(entry + 2, type)) return false;
    if (entry_tag != tag) continue;
    if (type == kTypeShort || type == kTypeSShort) return r.u16(entry + 8, value);
    if (type == kTypeLong || type == kTypeSLong) return r.u32(entry + 8, value);
    return false;
  }
  return false;
}

}  // namespace spdl_torch::core
