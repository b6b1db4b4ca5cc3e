// random_resized_crop_params: the [top, left, height, width, flip] that decode_images(geometry="train") draws
// for one sample's seed and (EXIF-oriented) image size; for tests and for reproducing a sample's crop.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "core/batch_decoder.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

std::vector<int64_t> random_resized_crop_params(int64_t seed, int64_t height, int64_t width,
                                                at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
                                                double hflip_prob) {
  return translate_core_errors("random_resized_crop_params", [&] {
    core::BatchOptions opt;
    opt.geometry = core::GeometryMode::Train;
    opt.height = 1;  // the output size does not change the box
    opt.width = 1;
    opt.scale.assign(scale.begin(), scale.end());
    opt.ratio.assign(ratio.begin(), ratio.end());
    opt.hflip_prob = hflip_prob;
    opt.validate();
    const core::SampleGeometry g = core::crop_params(opt, height, width, seed);
    return std::vector<int64_t>{g.box.top, g.box.left, g.box.height, g.box.width, g.flip ? 1 : 0};
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("random_resized_crop_params", &random_resized_crop_params); }

}  // namespace spdl_torch::ops
