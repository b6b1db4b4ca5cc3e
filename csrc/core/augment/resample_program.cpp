// SPDX-License-Identifier: BSD-3-Clause
#include "core/augment/resample_program.h"

#include <vector>

#include "core/augment/ops.h"
#include "core/augment/scratch.h"
#include "core/crop_geometry.h"

namespace spdl_torch::core::augment {
void resample_with_program(const uint8_t* src, int64_t src_height, int64_t src_width, int64_t src_row_bytes,
                           const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out, const float* rows,
                           int64_t steps) {
  ScratchBuffer<uint8_t, struct ProgramImage> image;  // the resized crop the program runs on
  std::vector<uint8_t>& scratch = *image;
  const int64_t h = out.height, w = out.width;
  scratch.resize(size_t(h * w * 3));
  SlotWriter rgb;
  rgb.data = scratch.data();
  rgb.type = OutType::UInt8;
  rgb.stride_c = 1;
  rgb.stride_h = w * 3;
  rgb.stride_w = 3;
  rgb.height = h;
  rgb.width = w;
  rgb.channels = 3;
  resample_into(src, src_height, src_width, src_row_bytes, wy, wx, rgb);
  run_program(rows, steps, RgbImage{scratch.data(), h, w});
  // Identity windows (one source pixel of weight 1 per output pixel): the writer's conversion only.
  const AxisWeights iy(resize_axis(h, h), h, h, ResampleFilter::Nearest, false);
  const AxisWeights ix(resize_axis(w, w), w, w, ResampleFilter::Nearest, false);
  resample_into(scratch.data(), h, w, w * 3, iy, ix, out);
}

}  // namespace spdl_torch::core::augment
