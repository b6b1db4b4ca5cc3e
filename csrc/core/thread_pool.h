// SPDX-License-Identifier: BSD-3-Clause
// The library's one pool of native threads, shared by all ops, and a parallel_for over it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/batch_turn.h"

namespace spdl_torch::core {

// A fixed set of worker threads taking tasks from one FIFO queue. RAII: the destructor lets the workers
// finish the queued tasks, then joins them. Never uses torch's intra-op threads.
class ThreadPool {
 public:
  // Starts num_threads (>= 1) workers; throws InvalidArgument for num_threads < 1 and std::system_error when
  // a thread cannot start (the ones already started are joined first).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return int(threads_.size()); }

  // Runs fn(order[k]) for k = 0..order.size()-1 on the workers: each worker takes the next k in turn, so
  // the items start in `order` (callers pass the largest first). Blocks until every started item returned.
  // After an exception no further item starts; the first exception is rethrown here. Called from a worker
  // of this pool (nesting), or for a single item, it runs the items inline on the calling thread instead.
  // on_last_claimed (optional, must not throw) runs once, on the thread that takes the last item, just
  // before that item runs: from then on the call queues no more work, and the pool's other workers are
  // free for the next call. It does not run when an exception stopped the items first, nor for no items.
  void parallel_for(const std::vector<int64_t>& order, const std::function<void(int64_t)>& fn,
                    const std::function<void()>& on_last_claimed = nullptr);

  // parallel_for over 0..n-1 in increasing order.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

  // Whether the calling thread is a worker of this pool (a nested call).
  bool on_worker_thread() const;

  // The batch turns of the calls that run their batches on this pool (batch_turn.h).
  BatchTurns& batch_turns() { return turns_; }

 private:
  void worker_loop();
  void submit(std::function<void()> task);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;

  BatchTurns turns_;
};

// The number of CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus();

// The pool size used when none was set: $SPDL_TORCH_NUM_THREADS when it is a positive integer, else
// available_cpus(). Throws InvalidArgument when the variable is set but not a positive integer.
int default_num_threads();

// The shared pool, created on first use with default_num_threads() threads. Callers keep the shared_ptr
// for the duration of their work, so a concurrent set_num_threads never pulls the pool from under them.
std::shared_ptr<ThreadPool> global_thread_pool();

// Replaces the shared pool by one of n threads (n >= 1; n == 0 restores the default size). Work already
// running finishes on the old pool, whose threads are joined once its last user lets go.
void set_global_num_threads(int n);

// The size of the shared pool (creating it if needed).
int global_num_threads();

}  // namespace spdl_torch::core
