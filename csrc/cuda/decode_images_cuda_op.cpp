// SPDX-License-Identifier: BSD-3-Clause
// decode_images_cuda: N encoded JPEGs -> one [N, 3, H, W] batch on a CUDA device. nvJPEG decodes the batch
// (nvjpeg_decoder.cpp); EXIF orientation, the crop geometry (core::sample_geometry: the CPU path's boxes and
// seeds), the antialiased resize, the flip and the dtype/normalisation run as ATen ops on the device, on the
// current stream. The encoded bytes are CPU tensors, so the kernel sits under the CPU key. Without nvJPEG at
// build time the op is a stub that says so.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/batch_decoder.h"
#include "core/batch_options.h"
#include "core/errors.h"
#include "core/jpeg_info.h"
#include "ops/batch_arguments.h"
#include "ops/error_translation.h"

#ifdef SPDL_TORCH_WITH_NVJPEG
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "cuda/nvjpeg_decoder.h"
#endif

namespace spdl_torch::ops {
namespace {

#ifdef SPDL_TORCH_WITH_NVJPEG

// Stored [3, H, W] -> displayed, as csrc/core/detail/orientation.cpp.
at::Tensor orient(const at::Tensor& img, int orientation) {
  switch (orientation) {
    case 2: return img.flip({2});
    case 3: return img.flip({1, 2});
    case 4: return img.flip({1});
    case 5: return img.transpose(1, 2);
    case 6: return img.transpose(1, 2).flip({2});
    case 7: return img.transpose(1, 2).flip({1, 2});
    case 8: return img.transpose(1, 2).flip({1});
    default: return img;
  }
}

// One axis of the sample's map: the source span [clip_lo, clip_hi) resized to virtual_size pixels, of which
// output pixels [first, first + out) are taken (zero padding outside).
void check_axis(const core::AxisMap& m, int64_t sample) {
  const double span = double(m.clip_hi - m.clip_lo);
  if (m.origin != double(m.clip_lo) || std::abs(span - m.scale * double(m.virtual_size)) > 1e-6 * span + 1e-9) {
    throw core::InternalError("decode_images(device='cuda'): a geometry whose map is not a crop and a resize",
                              sample);
  }
}

at::Tensor resize(const at::Tensor& img, int64_t h, int64_t w, core::ResampleFilter filter) {
  if (img.size(2) == h && img.size(3) == w) return img;
  if (filter == core::ResampleFilter::Bicubic) return at::_upsample_bicubic2d_aa(img, {h, w}, false);
  return at::_upsample_bilinear2d_aa(img, {h, w}, false);
}

// Source pixels of displayed image `img` (uint8 [3, H, W]) -> float [3, out_h, out_w], 0..255.
at::Tensor place(const at::Tensor& img, const core::SampleGeometry& g, const core::BatchOptions& opt, int64_t i) {
  check_axis(g.y, i);
  check_axis(g.x, i);
  at::Tensor src = img.slice(1, g.y.clip_lo, g.y.clip_hi).slice(2, g.x.clip_lo, g.x.clip_hi);
  at::Tensor r = resize(src.unsqueeze(0).to(at::kFloat), g.y.virtual_size, g.x.virtual_size, opt.filter).squeeze(0);
  at::Tensor out = at::zeros({3, opt.height, opt.width}, r.options());
  const int64_t y0 = std::max<int64_t>(0, -g.y.first), x0 = std::max<int64_t>(0, -g.x.first);
  const int64_t ys = std::max<int64_t>(0, g.y.first), xs = std::max<int64_t>(0, g.x.first);
  const int64_t hh = std::min(opt.height - y0, g.y.virtual_size - ys);
  const int64_t ww = std::min(opt.width - x0, g.x.virtual_size - xs);
  if (hh > 0 && ww > 0) {
    out.slice(1, y0, y0 + hh).slice(2, x0, x0 + ww).copy_(r.slice(1, ys, ys + hh).slice(2, xs, xs + ww));
  }
  return g.flip ? out.flip({2}) : out;
}

// The arguments in the schema's order: decode_images' stages (the samples and their decode, the geometry, the flip,
// the output, the execution), the device first.
std::tuple<at::Tensor, at::Tensor> decode_images_cuda(
    at::TensorList data, int64_t device_index, const c10::optional<at::Tensor>& seeds, bool apply_exif_orientation,
    int64_t max_pixels, int64_t height, int64_t width, c10::string_view geometry, int64_t resize_shorter,
    at::ArrayRef<double> scale, at::ArrayRef<double> ratio, c10::string_view interpolation, double hflip_prob,
    c10::optional<at::ScalarType> dtype, c10::optional<at::ArrayRef<double>> mean,
    c10::optional<at::ArrayRef<double>> std, c10::string_view dimension_order, bool strict) {
  const char* op = "decode_images(device='cuda')";
  TORCH_CHECK_VALUE(dimension_order == "NCHW" || dimension_order == "NHWC", op,
                    ": expected dimension_order 'NCHW' or 'NHWC', got '", std::string(dimension_order), "'");
  const bool nhwc = dimension_order == "NHWC";
  const int64_t n = int64_t(data.size());
  const at::ScalarType out_dtype = dtype.value_or(at::kByte);
  const core::BatchOptions opt = translate_core_errors(op, [&] {
    core::BatchOptions o;
    fill_batch_geometry(o, geometry, height, width, resize_shorter, scale, ratio, hflip_prob, interpolation,
                        out_dtype, mean, std, op);
    o.apply_exif_orientation = apply_exif_orientation;
    o.max_pixels = max_pixels;
    o.validate();
    return o;
  });
  TORCH_CHECK_VALUE(n >= 1, op, ": expected at least one image");
  for (int64_t i = 0; i < n; ++i) {
    const std::string what = std::string(op) + " (sample " + std::to_string(i) + ")";
    check_encoded_bytes(data[size_t(i)], what.c_str());
  }
  TORCH_CHECK_VALUE(!opt.random() || (seeds.has_value() && seeds->scalar_type() == at::kLong &&
                                      seeds->dim() == 1 && seeds->numel() == n),
                    op, ": expected seeds as an int64 tensor of shape [", n, "] for geometry=\"train\" or hflip_prob > 0");
  const at::Tensor seeds_cpu = seeds.has_value() ? seeds->to(at::kCPU).contiguous() : at::Tensor();
  TORCH_CHECK(device_index >= 0 && device_index < int64_t(at::cuda::device_count()), op, ": CUDA device ",
              device_index, " does not exist (", at::cuda::device_count(), " visible)");
  const c10::cuda::CUDAGuard guard(c10::Device(c10::kCUDA, c10::DeviceIndex(device_index)));
  const auto dev = at::TensorOptions().device(c10::kCUDA, c10::DeviceIndex(device_index));
  cuda::NvjpegDecoder& decoder = cuda::NvjpegDecoder::of_device(int(device_index));

  std::vector<at::Tensor> keep(static_cast<size_t>(n));
  std::vector<core::JpegInfo> infos(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<cuda::JpegJob> jobs;
  std::vector<int64_t> job_sample;
  std::vector<at::Tensor> planes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    keep[size_t(i)] = data[size_t(i)].contiguous();
    const uint8_t* p = keep[size_t(i)].data_ptr<uint8_t>();
    const size_t size = size_t(keep[size_t(i)].numel());
    core::JpegInfo& info = infos[size_t(i)];
    const char* why = nullptr;
    if (!core::read_jpeg_info(p, size, info, &why)) {
      errors[size_t(i)] = std::string(why) + ": device='cuda' decodes JPEG only (decode this sample on the CPU)";
      continue;
    }
    if (info.components == 4) {
      errors[size_t(i)] = "JPEG: CMYK/YCCK is not decoded by nvJPEG (decode this sample on the CPU)";
      continue;
    }
    if (opt.max_pixels > 0 && int64_t(info.stored_height) * info.stored_width > opt.max_pixels) {
      errors[size_t(i)] = "image of " + std::to_string(info.stored_width) + "x" + std::to_string(info.stored_height) +
                          " pixels is over max_pixels=" + std::to_string(opt.max_pixels);
      continue;
    }
    int h = 0, w = 0;
    std::string nv_why;
    if (!decoder.image_size(p, size, h, w, nv_why)) {
      errors[size_t(i)] = "JPEG: " + nv_why;
      continue;
    }
    planes[size_t(i)] = at::empty({3, h, w}, dev.dtype(at::kByte));
    jobs.push_back({p, size, planes[size_t(i)].data_ptr<uint8_t>(), h, w});
    job_sample.push_back(i);
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(c10::DeviceIndex(device_index)).stream();
  std::vector<std::string> job_errors;
  try {
    job_errors = decoder.decode(jobs, stream);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, op, ": ", e.what());
  }
  for (size_t k = 0; k < jobs.size(); ++k) errors[size_t(job_sample[k])] = job_errors[k];

  const auto format = nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor batch = at::zeros({n, 3, height, width}, dev.dtype(out_dtype).memory_format(format));
  at::Tensor ok = at::empty({n}, at::TensorOptions().dtype(at::kBool));
  std::vector<float> m(3, 0.0f), s(3, 1.0f);
  for (int c = 0; c < 3; ++c) {
    m[size_t(c)] = opt.channel_mean(c);
    s[size_t(c)] = opt.channel_std(c);
  }
  const at::Tensor mean_t = at::tensor(m).to(dev.device()).view({3, 1, 1});
  const at::Tensor std_t = at::tensor(s).to(dev.device()).view({3, 1, 1});
  for (int64_t i = 0; i < n; ++i) {
    ok.data_ptr<bool>()[i] = errors[size_t(i)].empty();
    if (!errors[size_t(i)].empty()) {
      if (strict) throw_tagged("DecodeError", {{"sample", i}}, errors[size_t(i)]);
      continue;
    }
    const int orientation = opt.apply_exif_orientation ? infos[size_t(i)].orientation : 1;
    const at::Tensor img = orient(planes[size_t(i)], orientation);
    const int64_t seed = seeds_cpu.defined() ? seeds_cpu.data_ptr<int64_t>()[i] : 0;
    const core::SampleGeometry g =
        translate_core_errors(op, [&] { return core::sample_geometry(opt, img.size(1), img.size(2), seed); });
    const at::Tensor v = translate_core_errors(op, [&] { return place(img, g, opt, i); });
    if (out_dtype == at::kByte) {
      batch[i].copy_(v.round().clamp_(0, 255));
    } else {
      at::Tensor f = v.div(255.0);
      if (opt.normalize()) f = f.sub(mean_t).div(std_t);
      batch[i].copy_(f);
    }
  }
  return {nhwc ? batch.permute({0, 2, 3, 1}) : batch, ok};
}

#else  // no nvJPEG at build time

std::tuple<at::Tensor, at::Tensor> decode_images_cuda(
    at::TensorList, int64_t, int64_t, int64_t, c10::string_view, int64_t, at::ArrayRef<double>,
    at::ArrayRef<double>, double, const c10::optional<at::Tensor>&, c10::string_view, c10::optional<at::ScalarType>,
    c10::optional<at::ArrayRef<double>>, c10::optional<at::ArrayRef<double>>, bool, bool, bool, int64_t) {
  TORCH_CHECK(false,
              "decode_images(device='cuda'): spdl_torch was built without nvJPEG (nvjpeg.h and libnvjpeg were not "
              "found at build time); install it (pip install nvidia-nvjpeg) and rebuild, or decode on the CPU");
}

#endif

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_images_cuda", &decode_images_cuda); }

}  // namespace spdl_torch::ops
