// Turns core exceptions into torch errors whose message starts with a tag that the Python layer maps to
// spdl_torch.DecodeError or OSError ("[DecodeError] ...", "[OSError errno=N] ...").
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "../core/errors.h"

namespace spdl_torch::ops {

template <typename Fn>
auto translate_core_errors(const char* op, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const core::DecodeError& e) {
    TORCH_CHECK(false, "[DecodeError] ", e.what());
  } catch (const core::IOError& e) {
    TORCH_CHECK(false, "[OSError errno=", e.code(), "] ", e.what());
  } catch (const core::InvalidArgument& e) {
    TORCH_CHECK_VALUE(false, op, ": ", e.what());
  }
}

// Checks that `data` holds encoded bytes: a 1-D uint8 CPU tensor.
void check_encoded_bytes(const at::Tensor& data, const char* op);

}  // namespace spdl_torch::ops
