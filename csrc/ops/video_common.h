// What the video ops share: the read options from their arguments, and core errors -> torch errors
// (translate_core_errors, plus FrameRangeError -> IndexError).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>

#include "../core/media_source.h"
#include "../core/video_types.h"
#include "error_translation.h"

namespace spdl_torch::ops {

core::VideoReadOptions video_read_options(const char* op, int64_t stream, int64_t threads, c10::string_view seek_mode,
                                          bool strict, bool apply_rotation, bool skip_nonref, int64_t max_pixels);

// The bytes of a 1-D uint8 CPU tensor as a MediaSource (`data` must be contiguous and outlive it).
core::MediaSource video_source(const at::Tensor& data);

template <typename Fn>
auto translate_video_errors(const char* op, Fn&& fn) -> decltype(fn()) {
  try {
    return translate_core_errors(op, fn);
  } catch (const core::FrameRangeError& e) {
    TORCH_CHECK_INDEX(false, op, ": ", e.what());
  }
}

}  // namespace spdl_torch::ops
