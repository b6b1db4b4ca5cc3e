// SPDX-License-Identifier: BSD-3-Clause
#include "core/batch_turn.h"

#include "core/thread_pool.h"

namespace spdl_torch::core {

void BatchTurn::release() noexcept {
  if (turns_ != nullptr && held_.exchange(false)) turns_->pass();
}

BatchTurn BatchTurns::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t ticket = issued_++;
  changed_.wait(lock, [&] { return serving_ == ticket; });
  return BatchTurn(this);
}

void BatchTurns::pass() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++serving_;
  }
  changed_.notify_all();  // the waiters are the calls queued for a turn: a few loader threads
}

int64_t BatchTurns::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return int64_t(issued_ - serving_);
}

BatchTurn wait_for_batch_turn(ThreadPool& pool) {
  return pool.on_worker_thread() ? BatchTurns::none() : pool.batch_turns().wait();
}

int64_t batch_turns_pending(ThreadPool& pool) { return pool.batch_turns().pending(); }

}  // namespace spdl_torch::core
