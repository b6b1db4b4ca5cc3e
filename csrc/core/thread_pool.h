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

namespace spdl_torch::core {

class ThreadPool;

// One batch call's turn on a pool (ThreadPool::wait_for_batch_turn). Held from its creation until the
// first release(), which any thread may call (a worker, as it starts the call's last item); later calls
// and the destructor then do nothing, so the turn is passed on exactly once on every path out of the call.
class BatchTurn {
 public:
  ~BatchTurn() { release(); }
  BatchTurn(const BatchTurn&) = delete;
  BatchTurn& operator=(const BatchTurn&) = delete;

  // Passes the turn to the next waiting call (if this one holds it). Thread-safe, idempotent.
  void release() noexcept;
  bool held() const noexcept { return held_.load(); }

 private:
  friend class ThreadPool;
  explicit BatchTurn(ThreadPool* pool) : pool_(pool), held_(pool != nullptr) {}

  ThreadPool* pool_;  // nullptr: no turn was taken (a call from a worker of the pool)
  std::atomic<bool> held_;
};

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

  // Batch turns: callers that each run a batch of work on this pool (decode_images) and take their output
  // memory only once their turn comes, so that a call waiting behind another holds no memory yet. Waits
  // until every call that asked before (first come, first served) has released its turn, then returns
  // this call's; the caller releases it as soon as its last item has been claimed (parallel_for's
  // on_last_claimed), so the next call's work queues up while this one's last items still run, and the
  // workers never idle between batches. Called from a worker of this pool (where parallel_for runs inline
  // and waiting could deadlock), it returns at once with a turn that holds nothing.
  BatchTurn wait_for_batch_turn();

  // Calls that asked for a batch turn and have not released it: the holder plus those waiting.
  int64_t batch_turns_pending();

 private:
  friend class BatchTurn;
  void worker_loop();
  void submit(std::function<void()> task);
  void pass_batch_turn() noexcept;  // BatchTurn::release

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;

  // Batch turns: a ticket lock. A caller takes ticket turns_issued_++ and holds the turn while
  // turn_serving_ equals its ticket; releasing increments turn_serving_. A child process made by fork()
  // never sees this pool's turns: it drops the parent's pool (global_thread_pool) and starts a fresh one.
  std::mutex turn_mutex_;
  std::condition_variable turn_changed_;
  uint64_t turns_issued_ = 0;
  uint64_t turn_serving_ = 0;
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
