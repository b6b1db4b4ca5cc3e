// SPDX-License-Identifier: BSD-3-Clause
// A video stream's metadata from the container's header (no packet read, no frame decoded): sizes,
// codec, rotation, time base, start, duration, rate, the header's frame count (-1 when it has none) and
// the index's key frames. Internal header.
#pragma once

#include "core/detail/ffmpeg/demux.h"
#include "core/video_types.h"

namespace spdl_torch::core::detail {

VideoMetadata read_video_header(Demuxer& demuxer, int stream);

}  // namespace spdl_torch::core::detail
