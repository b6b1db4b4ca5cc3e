// SPDX-License-Identifier: BSD-3-Clause
// What the video ops share: the read options from their arguments, and core errors -> torch errors
// (translate_core_errors, plus FrameRangeError -> IndexError).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>

#include "core/media_source.h"
#include "core/video_types.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {

core::VideoReadOptions video_read_options(const char* op, int64_t stream_index, int64_t num_ffmpeg_threads, c10::string_view seek_mode,
                                          bool strict, bool apply_rotation, bool skip_nonref, int64_t max_pixels);

// ValueError "<op>: the output, <what>, is N bytes (...), over max_output_bytes = M ..." when the product of
// `sizes` times `element_size` is over `max_output_bytes` (<= 0: no limit); computed without overflow.
void check_output_bytes(const char* op, at::IntArrayRef sizes, int64_t element_size, const std::string& what,
                        int64_t max_output_bytes);

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
