// decode_image: one encoded image (1-D uint8 tensor) to a uint8/uint16 Tensor[C, H, W] (channels-last strides).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "../core/errors.h"
#include "../core/image_decoder.h"
#include "error_translation.h"

namespace spdl_torch::ops {
namespace {

at::Tensor decode_image(const at::Tensor& data, c10::string_view mode, bool apply_exif_orientation,
                        int64_t max_pixels) {
  check_encoded_bytes(data, "decode_image");
  const at::Tensor bytes = data.contiguous();
  return translate_core_errors("decode_image", [&] {
    core::DecodeOptions opt;
    opt.mode = core::parse_color_mode(std::string(mode));
    opt.apply_exif_orientation = apply_exif_orientation;
    opt.max_pixels = max_pixels;
    at::Tensor hwc;
    core::decode_image(bytes.data_ptr<uint8_t>(), size_t(bytes.numel()), opt, [&](const core::ImageShape& s) {
      const auto dtype = s.type == core::ElemType::UInt8 ? at::kByte : at::kUInt16;
      hwc = at::empty({s.height, s.width, s.channels}, at::TensorOptions().dtype(dtype));
      return static_cast<uint8_t*>(hwc.data_ptr());
    });
    if (!hwc.defined()) throw core::InternalError("decode_image: the decoder produced no image");
    return hwc.permute({2, 0, 1});
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_image", &decode_image); }

}  // namespace spdl_torch::ops
