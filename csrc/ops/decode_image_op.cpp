// SPDX-License-Identifier: BSD-3-Clause
// decode_image: one encoded image (1-D uint8 tensor) to a Tensor[C, H, W] (channels-last strides) of the
// requested dtype (uint8 or uint16). dtype None: uint8, except mode UNCHANGED, which keeps the file's depth
// (uint16 for a 16-bit file), the rule of spdl_torch.io.decode_image; its fake kernel then asks for dtype=.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include "core/errors.h"
#include "core/image_decoder.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

at::Tensor decode_image(const at::Tensor& data, c10::string_view mode, bool apply_exif_orientation,
                        int64_t max_pixels, std::optional<at::ScalarType> dtype) {
  check_encoded_bytes(data, "decode_image");
  TORCH_CHECK(!dtype || *dtype == at::kByte || *dtype == at::kUInt16,
              "decode_image: expected dtype uint8 or uint16 (or None: the file's depth in UNCHANGED, else "
              "uint8), got ", *dtype);
  const at::Tensor bytes = data.contiguous();
  return translate_core_errors("decode_image", [&] {
    core::DecodeOptions opt;
    opt.mode = core::parse_color_mode(std::string(mode));
    opt.apply_exif_orientation = apply_exif_orientation;
    opt.max_pixels = max_pixels;
    opt.depth = !dtype                    ? core::BitDepth::Source
                : *dtype == at::kUInt16 ? core::BitDepth::Sixteen
                                        : core::BitDepth::Eight;
    at::Tensor hwc;
    core::decode_image(bytes.data_ptr<uint8_t>(), size_t(bytes.numel()), opt, [&](const core::ImageShape& s) {
      const auto type = s.type == core::ElemType::UInt8 ? at::kByte : at::kUInt16;
      hwc = at::empty({s.height, s.width, s.channels}, at::TensorOptions().dtype(type));
      return static_cast<uint8_t*>(hwc.data_ptr());
    });
    if (!hwc.defined()) throw core::InternalError("decode_image: the decoder produced no image");
    return hwc.permute({2, 0, 1});
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_image", &decode_image); }

}  // namespace spdl_torch::ops
