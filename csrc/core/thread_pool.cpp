// SPDX-License-Identifier: BSD-3-Clause
#include "core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/errors.h"

namespace spdl_torch::core {
namespace {

// The pool whose worker runs on this thread (nullptr on other threads): detects nested parallel_for.
thread_local const ThreadPool* current_pool = nullptr;

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 1) {
    throw InvalidArgument("expected a thread count >= 1, got " + std::to_string(num_threads));
  }
  threads_.reserve(size_t(num_threads));
  try {
    for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::worker_loop() {
  current_pool = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and nothing left to do
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();  // tasks never throw: parallel_for's wrapper catches everything
  }
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadPool::parallel_for(const std::vector<int64_t>& order, const std::function<void(int64_t)>& fn,
                              const std::function<void()>& on_last_claimed) {
  const int64_t n = int64_t(order.size());
  if (n == 0) return;
  if (current_pool == this || n == 1) {
    for (int64_t k = 0; k < n; ++k) {
      if (k == n - 1 && on_last_claimed) on_last_claimed();
      fn(order[size_t(k)]);
    }
    return;
  }
  struct State {
    std::atomic<int64_t> next{0};
    std::mutex mutex;
    std::condition_variable done;
    int64_t running = 0;
    std::exception_ptr error;
  };
  // Shared with the tasks: a task may still hold it for a moment after it signalled completion.
  auto state = std::make_shared<State>();
  const int64_t workers = std::min<int64_t>(n, int64_t(threads_.size()));
  state->running = workers;
  auto body = [state, n, &order, &fn, &on_last_claimed] {
    for (;;) {
      const int64_t k = state->next.fetch_add(1);
      if (k >= n) break;
      // fetch_add hands out each k once: exactly one thread takes the last item, unless an error stopped
      // the items first (next jumped to n). The caller is blocked below until this task is done, so the
      // references stay valid.
      if (k == n - 1 && on_last_claimed) on_last_claimed();
      try {
        fn(order[size_t(k)]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (!state->error) state->error = std::current_exception();
        state->next.store(n);  // start nothing more
      }
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    if (--state->running == 0) state->done.notify_all();
  };
  int64_t submitted = 0;
  try {
    for (; submitted < workers; ++submitted) submit(body);
  } catch (...) {
    // Could not queue every task (out of memory): the queued ones still finish the work.
    std::lock_guard<std::mutex> lock(state->mutex);
    state->running -= workers - submitted;
    if (submitted == 0) throw;
  }
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done.wait(lock, [&] { return state->running == 0; });
  if (state->error) std::rethrow_exception(state->error);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  std::vector<int64_t> order(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  parallel_for(order, fn);
}

bool ThreadPool::on_worker_thread() const { return current_pool == this; }

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

int default_num_threads() {
  const char* env = std::getenv("SPDL_TORCH_NUM_THREADS");
  if (env == nullptr || *env == '\0') return available_cpus();
  char* end = nullptr;
  const long value = std::strtol(env, &end, 10);
  if (*end != '\0' || value < 1 || value > 4096) {
    throw InvalidArgument(std::string("expected SPDL_TORCH_NUM_THREADS to be an integer in 1..4096, got \"") + env +
                          "\"");
  }
  return int(value);
}

namespace {

std::mutex global_mutex;  // trivially destructible: usable during and after static destruction
// Never destroyed. At process exit, static destructors run while other threads may still call into the library
// (a daemon thread the interpreter did not join): a destroyed slot would be a use-after-free for them, and
// destroying the pool there would join its workers on the exit path (a hang while a task is in progress). The
// workers of the pool it holds wait on its condition variable and end with the process.
std::shared_ptr<ThreadPool>& global_slot() {
  static auto* const pool = new std::shared_ptr<ThreadPool>();
  return *pool;
}

// fork(): only the forking thread exists in the child, so the parent's pool has no workers there and a
// parallel_for on it would wait forever (torch.utils.data.DataLoader forks its workers). The child drops
// that pool without joining or destroying it (its threads are not the child's to join) and creates a fresh
// one on next use. global_mutex is held across fork so that the child never inherits it locked mid-update.
void before_fork() { global_mutex.lock(); }
void after_fork_in_parent() { global_mutex.unlock(); }
void after_fork_in_child() {
  new std::shared_ptr<ThreadPool>(std::move(global_slot()));  // deliberately leaked: see above
  global_mutex.unlock();
}

void register_fork_handlers() {
  static const int registered = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  (void)registered;
}

}  // namespace

std::shared_ptr<ThreadPool> global_thread_pool() {
  register_fork_handlers();
  std::lock_guard<std::mutex> lock(global_mutex);
  std::shared_ptr<ThreadPool>& pool = global_slot();
  if (!pool) pool = std::make_shared<ThreadPool>(default_num_threads());
  return pool;
}

void set_global_num_threads(int n) {
  register_fork_handlers();
  if (n < 0) throw InvalidArgument("expected a thread count >= 0 (0: the default), got " + std::to_string(n));
  auto fresh = std::make_shared<ThreadPool>(n == 0 ? default_num_threads() : n);
  std::shared_ptr<ThreadPool> old;
  {
    std::lock_guard<std::mutex> lock(global_mutex);
    old = std::move(global_slot());
    global_slot() = std::move(fresh);
  }
  // `old` is released here, outside the lock; its threads join once its last user is done with it.
}

int global_num_threads() { return global_thread_pool()->num_threads(); }

}  // namespace spdl_torch::core
