// random_resized_crop_params: the [top, left, height, width, flip] that decode_images(mode="train") draws
// for one sample's seed and (EXIF-oriented) image size; for tests and for reproducing a sample's crop.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "../core/batch_decoder.h"

namespace spdl_torch::ops {
namespace {

std::vector<int64_t> random_resized_crop_params(int64_t seed, int64_t height, int64_t width,
                                                at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
                                                double hflip_prob) {
  TORCH_CHECK_VALUE(height > 0 && width > 0, "random_resized_crop_params: expected a positive image size, got ",
                    height, "x", width);
  TORCH_CHECK_VALUE(scale.size() == 2 && 0 < scale[0] && scale[0] <= scale[1],
                    "random_resized_crop_params: expected scale = [lo, hi] with 0 < lo <= hi, got ", scale);
  TORCH_CHECK_VALUE(ratio.size() == 2 && 0 < ratio[0] && ratio[0] <= ratio[1],
                    "random_resized_crop_params: expected ratio = [lo, hi] with 0 < lo <= hi, got ", ratio);
  core::BatchOptions opt;
  opt.mode = core::GeometryMode::Train;
  opt.height = 1;
  opt.width = 1;
  opt.scale_lo = scale[0];
  opt.scale_hi = scale[1];
  opt.ratio_lo = ratio[0];
  opt.ratio_hi = ratio[1];
  opt.hflip_prob = hflip_prob;
  const core::SampleGeometry g = core::sample_geometry(opt, height, width, seed);
  return {g.box.top, g.box.left, g.box.height, g.box.width, g.flip ? 1 : 0};
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("random_resized_crop_params", &random_resized_crop_params); }

}  // namespace spdl_torch::ops
