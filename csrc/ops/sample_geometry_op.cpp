// SPDX-License-Identifier: BSD-3-Clause
// sample_geometry: the [top, left, crop_height, crop_width, hflip, vflip] that decode_images draws for one
// sample's seed and (EXIF-oriented) image size (image_height x image_width), for every geometry, with
// decode_images' names for the rest (height, width: the output size); FusedPlan.sample_geometry calls it.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "core/batch_decoder.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

std::vector<int64_t> sample_geometry(int64_t seed, int64_t image_height, int64_t image_width, int64_t height,
                                     int64_t width, c10::string_view geometry, int64_t resize_shorter,
                                     int64_t max_size, at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
                                     at::IntArrayRef padding, bool pad_if_needed, double hflip_prob,
                                     double vflip_prob) {
  return translate_core_errors("sample_geometry", [&] {
    core::BatchOptions opt;
    opt.geometry = core::parse_geometry_mode(std::string(geometry));
    opt.height = height;
    opt.width = width;
    opt.resize_shorter = resize_shorter;
    opt.max_size = max_size;
    opt.scale.assign(scale.begin(), scale.end());
    opt.ratio.assign(ratio.begin(), ratio.end());
    opt.padding.assign(padding.begin(), padding.end());
    opt.pad_if_needed = pad_if_needed;
    opt.hflip_prob = hflip_prob;
    opt.vflip_prob = vflip_prob;
    opt.validate();
    const core::SampleGeometry g = core::crop_params(opt, image_height, image_width, seed);
    return std::vector<int64_t>{g.box.top, g.box.left, g.box.height, g.box.width, g.flip ? 1 : 0, g.vflip ? 1 : 0};
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("sample_geometry", &sample_geometry); }

}  // namespace spdl_torch::ops
