// SPDX-License-Identifier: BSD-3-Clause
// What this build of the core holds. FFmpeg is optional: a build with SPDL_TORCH_NO_FFMPEG (setup.py's
// SPDL_TORCH_FFMPEG=0) leaves out core/detail/ffmpeg/, video and audio, and decodes JPEG only (libjpeg-turbo).
#pragma once

namespace spdl_torch::core {

#ifdef SPDL_TORCH_NO_FFMPEG
constexpr bool kWithFfmpeg = false;
#else
constexpr bool kWithFfmpeg = true;
#endif

// The formats decode_image / decode_batch decode in this build (build_info's "decoders").
constexpr const char* kImageDecoders = kWithFfmpeg ? "jpeg,png,gif,webp,bmp,tiff,pnm" : "jpeg";

// The reason every FFmpeg feature of a build without it gives, after the feature's name.
constexpr const char* kNoFfmpegReason =
    " needs FFmpeg, and this spdl_torch was built without it (SPDL_TORCH_FFMPEG=0: JPEG images only); install "
    "FFmpeg's -dev packages (apt-get install libavcodec-dev libavformat-dev libavutil-dev libswscale-dev "
    "libswresample-dev) and rebuild without SPDL_TORCH_FFMPEG=0";

}  // namespace spdl_torch::core
