// SPDX-License-Identifier: BSD-3-Clause
// The process-wide cache of packet indexes (audio_index.h): a path's index is kept under the file's identity
// (device, inode, size, modification and change times in ns), least recently used first out, at most
// kPacketIndexCacheBytes in all. A file rewritten in place has a new change time, so it is indexed again;
// an index built from a file changed less than a moment before is used once and not kept (a second change
// within the times' granularity would keep them). Bytes in memory are indexed at each call, never kept.
// Thread-safe. Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/detail/ffmpeg/audio_index.h"
#include "core/media_source.h"

namespace spdl_torch::core::detail {

constexpr size_t kPacketIndexCacheBytes = size_t(64) << 20;

// The index of `source`'s stream `stream` at `sample_rate`: the cached one when the file is unchanged, else
// built (build_packet_index) and, for a path, kept.
std::shared_ptr<const PacketIndex> cached_packet_index(const MediaSource& source, const DemuxOptions& options,
                                                       int stream, int sample_rate);

// For tests: the cache's counters since the process started (or the last clear).
struct PacketIndexCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  int64_t not_kept = 0;  // built from a file changed a moment before, or from bytes
  size_t bytes = 0;
};
PacketIndexCacheStats packet_index_cache_stats();
void clear_packet_index_cache();

}  // namespace spdl_torch::core::detail
