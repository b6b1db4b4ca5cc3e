// SPDX-License-Identifier: BSD-3-Clause
// A build without FFmpeg (SPDL_TORCH_NO_FFMPEG): the still-image entry point of core/detail/ffmpeg/ raises
// a DecodeError naming the missing FFmpeg, so decode_image raises it and decode_batch reports the sample.
// Empty in a build with FFmpeg, where core/detail/ffmpeg/ffmpeg_image_decoder.cpp defines it.
#ifdef SPDL_TORCH_NO_FFMPEG

#include <string>

#include "core/detail/ffmpeg/ffmpeg_image_decoder.h"
#include "core/errors.h"
#include "core/features.h"

namespace spdl_torch::core {

void decode_with_ffmpeg(ImageFormat format, const uint8_t*, size_t, const DecodeOptions&, const OutputAllocator&) {
  throw DecodeError(std::string(image_format_name(format)) + " image: decoding it" + kNoFfmpegReason);
}

}  // namespace spdl_torch::core

#endif  // SPDL_TORCH_NO_FFMPEG
