// SPDX-License-Identifier: BSD-3-Clause
// A build without FFmpeg (SPDL_TORCH_NO_FFMPEG): the video and audio ops are registered with kernels that
// raise NotImplementedError naming the missing FFmpeg and how to rebuild, instead of the dispatcher's "could
// not run ...". Boxed, so they follow whatever the schemas in registration.cpp say. Empty with FFmpeg.
#ifdef SPDL_TORCH_NO_FFMPEG

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "core/features.h"

namespace spdl_torch::ops {
namespace {

void without_ffmpeg(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().name(), core::kNoFfmpegReason);
}

torch::CppFunction stub() { return torch::CppFunction::makeFromBoxedFunction<&without_ffmpeg>(); }

}  // namespace

// The dispatch keys of the real kernels: CPU for ops with tensor inputs, BackendSelect for the others.
TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) {
  for (const char* name :
       {"video_metadata", "decode_video_frames", "decode_video_clips", "decode_audio", "audio_metadata"}) {
    m.impl(name, stub());
  }
}
TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) {
  for (const char* name : {"decode_audio_file", "audio_metadata_file", "decode_audio_batch"}) m.impl(name, stub());
}

}  // namespace spdl_torch::ops

#endif  // SPDL_TORCH_NO_FFMPEG
