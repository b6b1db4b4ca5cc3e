// SPDX-License-Identifier: BSD-3-Clause
// Batch turns: calls that each run a batch of work on one thread pool (decode_images) take their output
// memory only when their turn comes, first come first served, so a call waiting behind another holds no
// memory yet. A call releases its turn as soon as its last item has been claimed (parallel_for's
// on_last_claimed), so the next call's work queues up while this one's last items still run and the
// workers never idle between batches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace spdl_torch::core {

class BatchTurns;
class ThreadPool;

// One call's turn. Held from its creation until the first release(), which any thread may call (a worker,
// as it starts the call's last item); later calls and the destructor then do nothing, so the turn is
// passed on exactly once on every path out of the call.
class BatchTurn {
 public:
  ~BatchTurn() { release(); }
  BatchTurn(const BatchTurn&) = delete;
  BatchTurn& operator=(const BatchTurn&) = delete;

  // Passes the turn to the next waiting call (if this one holds it). Thread-safe, idempotent.
  void release() noexcept;
  bool held() const noexcept { return held_.load(); }

 private:
  friend class BatchTurns;
  explicit BatchTurn(BatchTurns* turns) : turns_(turns), held_(turns != nullptr) {}

  BatchTurns* turns_;  // nullptr: no turn was taken
  std::atomic<bool> held_;
};

// The turns of one pool: a ticket lock. A caller takes ticket issued_++ and holds the turn while serving_
// equals its ticket; releasing increments serving_. A child process made by fork() never sees these
// turns: it drops the parent's pool (global_thread_pool) and starts a fresh one.
class BatchTurns {
 public:
  BatchTurns() = default;
  BatchTurns(const BatchTurns&) = delete;
  BatchTurns& operator=(const BatchTurns&) = delete;

  // Waits until every call that asked before has released its turn, then returns this call's.
  BatchTurn wait();
  // A turn that holds nothing (for a call that must not wait: one from a worker of the pool).
  static BatchTurn none() { return BatchTurn(nullptr); }
  // Calls that asked for a turn and have not released it: the holder plus those waiting.
  int64_t pending();

 private:
  friend class BatchTurn;
  void pass() noexcept;  // BatchTurn::release

  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t issued_ = 0;
  uint64_t serving_ = 0;
};

// The batch turn of a call on `pool`: pool.batch_turns().wait(), or, called from a worker of the pool
// (where parallel_for runs inline and waiting could deadlock), at once a turn that holds nothing.
BatchTurn wait_for_batch_turn(ThreadPool& pool);

// pool.batch_turns().pending().
int64_t batch_turns_pending(ThreadPool& pool);

}  // namespace spdl_torch::core
