// SPDX-License-Identifier: BSD-3-Clause
// Batch output memory: one anonymous mapping per batch, recycled through a small capped pool.
//
// Why not at::empty (glibc malloc): a batch is allocated on a DataLoader worker thread and freed by the
// consumer, so it lives in the worker thread's malloc arena, and glibc's dynamic mmap threshold then keeps
// freed batches resident there. Why not plain mmap/munmap per batch: every batch would page-fault and
// zero-fill thousands of fresh 4 KiB pages. So: mappings start on a 2 MiB boundary and ask for transparent
// huge pages, and up to `capacity` bytes of freed buffers are kept for reuse by a later request of the same
// mapped size. Everything past the capacity is unmapped at once, so what a loader holds beyond its live
// batches is bounded by the capacity, not by malloc's heuristics. Measured on 2 vCPUs with float32 batches of
// 32 x 3 x 224 x 224 (18.4 MiB) and 2 workers: with glibc, 45-80 MiB more sat free inside the arenas at the
// loader's peak, beside the 3 live batches (benchmarks/mem_probe.py, arena_free). Writing a whole batch into
// fresh 4 KiB pages costs 11-12 ms (mmap, faults, zero-fill, munmap), into a fresh 2 MiB-aligned MADV_HUGEPAGE
// mapping 1.0-2.6 ms, into a recycled buffer 0.6-0.7 ms; through decode_images a fresh mapping adds +1 to +10 ms
// to a recycled buffer's ~52 ms per batch (benchmarks/bench_batch_memory.py).
#include "ops/batch_memory.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace spdl_torch::ops {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Default pool capacity: two float32 batches of 32 x 3 x 224 x 224, the steady state of 2 workers (every
// batch recycled). CPU per image is what the project exists for, and a fresh mapping costs CPU in the
// decode threads whatever transparent huge pages do (where THP's defrag setting is "madvise", Debian's default,
// those faults can stall in direct compaction: 0.12-0.35 ms of kernel time per image on a 0.8-1.1 ms op at
// capacity 0, 0.00-0.01 ms with two batches pooled; benchmarks/bench_decode_images.py with
// set_batch_memory_capacity(0)). Capacity 0 trades that CPU for ~1-1.5 batches of peak memory: a recycled buffer
// is resident in full while it is refilled (benchmarks/mem_probe.py --pool-capacity-mib 0 / 40).
constexpr int64_t kDefaultCapacity = int64_t(40) << 20;

size_t page_size() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// One anonymous mapping, owned: unmapped by the destructor.
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    // map 2 MiB - 1 page more, then cut the head and tail so that the buffer starts on a 2 MiB boundary
    // (transparent huge pages only back whole aligned 2 MiB ranges)
    const size_t slack = kHugePage - page_size();
    void* raw = mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      const int err = errno;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "batch memory: mmap of ", bytes, " bytes failed: ",
                       std::strerror(err));
    }
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up(start, kHugePage);
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + bytes + slack;
    if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
    ptr_ = reinterpret_cast<void*>(aligned);
    if (bytes >= kHugePage) madvise(ptr_, bytes, MADV_HUGEPAGE);  // a hint: fails harmlessly without THP
  }
  ~Mapping() { munmap(ptr_, bytes_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

class BatchMemoryPool final : public c10::Allocator {
 public:
  BatchMemoryPool()
      : capacity_(kDefaultCapacity) {
    // a fork while another thread holds the lock would leave it locked forever in the child
    pthread_atfork([] { instance().mu_.lock(); }, [] { instance().mu_.unlock(); },
                   [] { instance().mu_.unlock(); });
  }

  // Never destroyed: tensors freed during interpreter or static teardown still find their pool.
  static BatchMemoryPool& instance() {
    static BatchMemoryPool* pool = new BatchMemoryPool();
    return *pool;
  }

  c10::DataPtr allocate(size_t n) override {
    if (n < size_t(kMinPooledBytes)) return c10::GetCPUAllocator()->allocate(n);
    const size_t bytes = round_up(n, page_size());
    std::unique_ptr<Mapping> m;
    std::vector<std::unique_ptr<Mapping>> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = pool_.rbegin(); it != pool_.rend(); ++it) {  // most recently freed first
        if ((*it)->bytes() == bytes) {
          m = std::move(*it);
          pool_.erase(std::next(it).base());
          pooled_bytes_ -= bytes;
          ++stats_.reuses;
          break;
        }
      }
      if (!m) {
        // a new size (e.g. an epoch's last, smaller batch): make room so that the pool stays within its
        // capacity once this buffer comes back too
        evict_locked(int64_t(bytes) <= capacity_ ? capacity_ - int64_t(bytes) : 0, evicted);
        ++stats_.maps;
      }
      ++stats_.live_buffers;
      stats_.live_bytes += int64_t(bytes);
      stats_.peak_live_buffers = std::max(stats_.peak_live_buffers, stats_.live_buffers);
      stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
    }
    evicted.clear();  // unmapped outside the lock
    if (!m) {
      try {
        m = std::make_unique<Mapping>(bytes);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        --stats_.maps;
        --stats_.live_buffers;
        stats_.live_bytes -= int64_t(bytes);
        throw;
      }
    }
    void* data = m->data();
    return {data, m.release(), &BatchMemoryPool::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  BatchMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    BatchMemoryStats s = stats_;
    s.pooled_buffers = int64_t(pool_.size());
    s.pooled_bytes = int64_t(pooled_bytes_);
    return s;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_live_buffers = stats_.live_buffers;
    stats_.peak_live_bytes = stats_.live_bytes;
  }

  void set_capacity(int64_t bytes) {
    std::vector<std::unique_ptr<Mapping>> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      capacity_ = bytes;
      evict_locked(capacity_, evicted);
    }
  }

  int64_t capacity() {
    std::lock_guard<std::mutex> lock(mu_);
    return capacity_;
  }

 private:
  // The DataPtr deleter: keeps the buffer (most recent last) and unmaps the least recently freed ones
  // past the capacity.
  static void give_back(void* ctx) {
    std::unique_ptr<Mapping> m(static_cast<Mapping*>(ctx));
    BatchMemoryPool& self = instance();
    std::vector<std::unique_ptr<Mapping>> evicted;
    {
      std::lock_guard<std::mutex> lock(self.mu_);
      --self.stats_.live_buffers;
      self.stats_.live_bytes -= int64_t(m->bytes());
      self.pooled_bytes_ += m->bytes();
      self.pool_.push_back(std::move(m));
      self.evict_locked(self.capacity_, evicted);
    }
  }

  // Moves the least recently freed buffers out of the pool until it holds at most `limit` bytes.
  void evict_locked(int64_t limit, std::vector<std::unique_ptr<Mapping>>& out) {
    while (!pool_.empty() && int64_t(pooled_bytes_) > limit) {
      pooled_bytes_ -= pool_.front()->bytes();
      out.push_back(std::move(pool_.front()));
      pool_.pop_front();
      ++stats_.unmaps;
    }
  }

  std::mutex mu_;
  std::deque<std::unique_ptr<Mapping>> pool_;  // freed buffers, least recently freed first
  size_t pooled_bytes_ = 0;
  int64_t capacity_;
  BatchMemoryStats stats_;
};

}  // namespace

at::Tensor empty_batch(at::IntArrayRef sizes, at::ScalarType dtype, at::MemoryFormat format) {
  return at::detail::empty_generic(sizes, &BatchMemoryPool::instance(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   dtype, format);
}

BatchMemoryStats batch_memory_stats() { return BatchMemoryPool::instance().stats(); }

void reset_batch_memory_peak() { BatchMemoryPool::instance().reset_peak(); }

void set_batch_memory_capacity(int64_t bytes) {
  TORCH_CHECK_VALUE(bytes >= 0, "set_batch_memory_capacity: expected bytes >= 0, got ", bytes);
  BatchMemoryPool::instance().set_capacity(bytes);
}

int64_t batch_memory_capacity() { return BatchMemoryPool::instance().capacity(); }

}  // namespace spdl_torch::ops
