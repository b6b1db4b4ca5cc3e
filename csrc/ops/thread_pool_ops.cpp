// SPDX-License-Identifier: BSD-3-Clause
// set_num_threads / get_num_threads: the size of the library's shared native thread pool. No tensor
// inputs, so the kernels sit under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "core/thread_pool.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

void set_num_threads(int64_t n) {
  TORCH_CHECK_VALUE(n >= 0 && n <= 4096, "set_num_threads: expected 0 (the default) to 4096 threads, got ", n);
  translate_core_errors("set_num_threads", [&] { core::set_global_num_threads(int(n)); });
}

int64_t get_num_threads() {
  return translate_core_errors("get_num_threads", [] { return int64_t(core::global_num_threads()); });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) {
  m.impl("set_num_threads", &set_num_threads);
  m.impl("get_num_threads", &get_num_threads);
}

}  // namespace spdl_torch::ops
