// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/audio_index_cache.h"

#include <sys/stat.h>
#include <time.h>

#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace spdl_torch::core::detail {
namespace {

struct FileKey {
  std::string path;
  int stream = 0;
  int sample_rate = 0;
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileKey& o) const {
    return path == o.path && stream == o.stream && sample_rate == o.sample_rate && device == o.device &&
           inode == o.inode && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

struct FileKeyHash {
  size_t operator()(const FileKey& k) const {
    size_t h = std::hash<std::string>()(k.path);
    for (uint64_t v : {uint64_t(k.stream), uint64_t(k.sample_rate), k.device, k.inode, uint64_t(k.size),
                       uint64_t(k.mtime_ns), uint64_t(k.ctime_ns)}) {
      h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    }
    return h;
  }
};

int64_t ns(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + int64_t(t.tv_nsec); }

// The file's identity, and whether it changed too recently to be kept: within 100 ms of now, or 2 s where
// the file system's times are whole seconds (a change within their granularity would leave them equal).
bool file_key(const MediaSource& source, int stream, int sample_rate, FileKey* key, bool* recent) {
  struct stat st {};
  if (::stat(source.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  key->path = source.path;
  key->stream = stream;
  key->sample_rate = sample_rate;
  key->device = uint64_t(st.st_dev);
  key->inode = uint64_t(st.st_ino);
  key->size = int64_t(st.st_size);
  key->mtime_ns = ns(st.st_mtim);
  key->ctime_ns = ns(st.st_ctim);
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME, &now);
  const bool whole_seconds = key->mtime_ns % 1000000000 == 0 && key->ctime_ns % 1000000000 == 0;
  const int64_t margin = whole_seconds ? int64_t(2000000000) : int64_t(100000000);
  *recent = ns(now) - std::max(key->mtime_ns, key->ctime_ns) < margin;
  return true;
}

class Cache {
 public:
  std::shared_ptr<const PacketIndex> find(const FileKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = map_.find(key);
    if (it == map_.end()) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  void insert(const FileKey& key, std::shared_ptr<const PacketIndex> index) {
    const size_t bytes = index->memory_bytes() + key.path.size();
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > kPacketIndexCacheBytes || map_.count(key)) return;
    lru_.emplace_front(key, std::move(index));
    map_.emplace(key, lru_.begin());
    stats_.bytes += bytes;
    while (stats_.bytes > kPacketIndexCacheBytes && !lru_.empty()) {
      stats_.bytes -= lru_.back().second->memory_bytes() + lru_.back().first.path.size();
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
    stats_.entries = int64_t(map_.size());
  }

  void not_kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.not_kept;
  }

  PacketIndexCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    map_.clear();
    lru_.clear();
    stats_ = {};
  }

 private:
  using Entry = std::pair<FileKey, std::shared_ptr<const PacketIndex>>;
  std::mutex mutex_;
  std::list<Entry> lru_;
  std::unordered_map<FileKey, std::list<Entry>::iterator, FileKeyHash> map_;
  PacketIndexCacheStats stats_;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: worker threads may still use it at exit
  return *c;
}

}  // namespace

std::shared_ptr<const PacketIndex> cached_packet_index(const MediaSource& source, const DemuxOptions& options,
                                                       int stream, int sample_rate) {
  FileKey key;
  bool recent = true;
  if (source.in_memory() || !file_key(source, stream, sample_rate, &key, &recent)) {
    cache().not_kept();
    return build_packet_index(source, options, stream, sample_rate);
  }
  if (auto hit = cache().find(key)) return hit;
  auto index = build_packet_index(source, options, stream, sample_rate);
  if (recent) {
    cache().not_kept();
  } else {
    cache().insert(key, index);
  }
  return index;
}

PacketIndexCacheStats packet_index_cache_stats() { return cache().stats(); }

void clear_packet_index_cache() { cache().clear(); }

}  // namespace spdl_torch::core::detail
