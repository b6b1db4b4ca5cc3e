// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/pixels/resample_slot_writer.h"

#include "core/errors.h"

namespace spdl_torch::core::detail {

void check_resample_args(int64_t src_height, int64_t src_width, int64_t src_row_bytes, const AxisWeights& wy,
                         const AxisWeights& wx, const SlotWriter& out) {
  const int ch = out.source_channels();
  if ((out.gray != GrayRule::None && out.channels != 1 && out.channels != 3) ||
      wy.out_size != out.height || wx.out_size != out.width || wy.src_hi > src_height || wx.src_hi > src_width ||
      src_row_bytes < src_width * ch || ch < 1 || ch > 4) {
    throw InternalError("resample: windows do not match the source or the slot");
  }
}

void normalization(const SlotWriter& out, float* mul, float* add) {
  for (int c = 0; c < 4; ++c) {
    const bool used = c < out.channels;
    const float sd = used && out.normalize ? out.std[c] : 1.0f;
    const float m = used && out.normalize ? out.mean[c] : 0.0f;
    mul[c] = used ? 1.0f / (255.0f * sd) : 1.0f;
    add[c] = used ? -m / sd : 0.0f;
  }
}

}  // namespace spdl_torch::core::detail
