// SPDX-License-Identifier: BSD-3-Clause
// decode_images: N encoded images -> one finished batch (decode, crop, resize, flip, normalize, collate)
// written by the shared native thread pool, plus a bool mask of the samples that decoded.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <vector>

#include "core/augment/ops.h"
#include "core/batch_decoder.h"
#include "core/batch_turn.h"
#include "core/thread_pool.h"
#include "ops/batch_arguments.h"
#include "ops/batch_memory.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

// augment: float32 [n, K, 8], every sample's rows valid (augment::validate_program: each row and the nesting of
// its mix rows); a contiguous CPU copy or view.
at::Tensor checked_augment(const c10::optional<at::Tensor>& augment, int64_t n) {
  if (!augment.has_value()) return {};
  const at::Tensor& a = *augment;
  TORCH_CHECK_VALUE(a.scalar_type() == at::kFloat && a.dim() == 3 && a.size(0) == n &&
                        a.size(2) == core::augment::kColumns,
                    "decode_images: expected augment as a float32 tensor of shape [", n, ", K, ",
                    core::augment::kColumns, "], got ", a.scalar_type(), " of shape ", a.sizes());
  at::Tensor c = a.to(at::kCPU).contiguous();
  translate_core_errors("decode_images", [&] {
    const float* p = c.data_ptr<float>();
    const int64_t steps = c.size(1);
    for (int64_t i = 0; i < n; ++i) {
      core::augment::validate_program(p + i * steps * core::augment::kColumns, steps, [i](int64_t k) {
        return "augment[" + std::to_string(i) + ", " + std::to_string(k) + "]";
      });
    }
  });
  return c;
}

// erase: float32 [n, 8] (one row per sample) or [n, B, 8] (B rows per sample, applied in order), every row
// valid (augment::validate_erase). Returned as a contiguous CPU [n, B, 8].
at::Tensor checked_erase(const c10::optional<at::Tensor>& erase, int64_t n) {
  if (!erase.has_value()) return {};
  const at::Tensor& e = *erase;
  constexpr int64_t kCols = core::augment::kEraseColumns;
  TORCH_CHECK_VALUE(e.scalar_type() == at::kFloat && (e.dim() == 2 || e.dim() == 3) && e.size(0) == n &&
                        e.size(-1) == kCols,
                    "decode_images: expected erase as a float32 tensor of shape [", n, ", ", kCols, "] or [", n,
                    ", B, ", kCols, "], got ", e.scalar_type(), " of shape ", e.sizes());
  at::Tensor c = (e.dim() == 2 ? e.unsqueeze(1) : e).to(at::kCPU).contiguous();
  translate_core_errors("decode_images", [&] {
    const float* p = c.data_ptr<float>();
    const int64_t boxes = c.size(1);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t b = 0; b < boxes; ++b) {
        const std::string where = e.dim() == 2 ? "erase[" + std::to_string(i) + "]"
                                               : "erase[" + std::to_string(i) + ", " + std::to_string(b) + "]";
        core::augment::validate_erase(p + (i * boxes + b) * kCols, where);
      }
    }
  });
  return c;
}

// The arguments in the schema's order, grouped by stage as decode_images' Python signature: the samples and their
// decode, the geometry, the flips, the augmentation, the output (colour, dtype, normalisation, dimension order),
// the execution.
std::tuple<at::Tensor, at::Tensor> decode_images(
    at::TensorList data, const c10::optional<at::Tensor>& seeds, bool apply_exif_orientation, int64_t max_pixels,
    double dct_min_ratio, bool partial_decode, int64_t height, int64_t width, c10::string_view geometry,
    int64_t resize_shorter, int64_t max_size, at::ArrayRef<double> scale, at::ArrayRef<double> ratio,
    at::IntArrayRef padding, bool pad_if_needed, c10::string_view interpolation, double hflip_prob, double vflip_prob,
    const c10::optional<at::Tensor>& augment, const c10::optional<at::Tensor>& erase, c10::string_view color,
    int64_t num_output_channels, c10::optional<at::ScalarType> dtype, c10::optional<at::ArrayRef<double>> mean,
    c10::optional<at::ArrayRef<double>> std, c10::string_view dimension_order, bool pin_memory, bool strict) {
  const int64_t n = int64_t(data.size());
  const at::ScalarType out_dtype = dtype.value_or(at::kByte);
  TORCH_CHECK_VALUE(dimension_order == "NCHW" || dimension_order == "NHWC",
                    "decode_images: expected dimension_order 'NCHW' or 'NHWC', got '", std::string(dimension_order),
                    "'");
  const bool nhwc = dimension_order == "NHWC";
  const core::BatchOptions opt = translate_core_errors("decode_images", [&] {
    core::BatchOptions o;
    fill_batch_geometry(o, geometry, height, width, resize_shorter, scale, ratio, hflip_prob, interpolation,
                        out_dtype, mean, std, "decode_images");
    o.apply_exif_orientation = apply_exif_orientation;
    o.max_pixels = max_pixels;
    o.dct_min_ratio = dct_min_ratio;
    o.partial_decode = partial_decode;
    o.vflip_prob = vflip_prob;
    o.max_size = max_size;
    o.padding.assign(padding.begin(), padding.end());
    o.pad_if_needed = pad_if_needed;
    o.gray = core::parse_color(std::string(color));
    o.num_output_channels = int(num_output_channels);
    o.validate();
    return o;
  });
  for (int64_t i = 0; i < n; ++i) {
    const std::string what = "decode_images (sample " + std::to_string(i) + ")";
    check_encoded_bytes(data[size_t(i)], what.c_str());
  }
  at::Tensor seeds_cpu;
  if (seeds.has_value()) {
    TORCH_CHECK_VALUE(seeds->scalar_type() == at::kLong && seeds->dim() == 1 && seeds->numel() == n,
                      "decode_images: expected seeds as an int64 tensor of shape [", n, "], got ",
                      seeds->scalar_type(), " of shape ", seeds->sizes());
    seeds_cpu = seeds->to(at::kCPU).contiguous();
  } else {
    TORCH_CHECK_VALUE(!opt.random(), "decode_images: expected seeds (int64[", n,
                      "]) for geometry=\"train\" or \"random_crop\", hflip_prob > 0 or vflip_prob > 0, got None");
  }
  const at::Tensor augment_cpu = checked_augment(augment, n);
  const at::Tensor erase_cpu = checked_erase(erase, n);
  TORCH_CHECK_VALUE(seeds_cpu.defined() || !erase_cpu.defined() || (erase_cpu.select(2, 0) != 2).all().item<bool>(),
                    "decode_images: expected seeds (int64[", n, "]) for erase rows with apply=2 (random values), "
                    "got None");
  TORCH_CHECK(!pin_memory || at::globalContext().hasCUDA(),
              "decode_images: pin_memory=True needs a CUDA runtime, none is available");
  std::vector<core::SampleInput> inputs(static_cast<size_t>(n));
  std::vector<at::Tensor> keep(static_cast<size_t>(n));  // contiguous views (or copies) that outlive the work
  for (int64_t i = 0; i < n; ++i) {
    keep[size_t(i)] = data[size_t(i)].contiguous();
    inputs[size_t(i)].data = keep[size_t(i)].data_ptr<uint8_t>();
    inputs[size_t(i)].size = size_t(keep[size_t(i)].numel());
    inputs[size_t(i)].seed = seeds_cpu.defined() ? seeds_cpu.data_ptr<int64_t>()[i] : 0;
    if (augment_cpu.defined()) {
      inputs[size_t(i)].augment = augment_cpu.data_ptr<float>() + i * augment_cpu.stride(0);
      inputs[size_t(i)].augment_steps = augment_cpu.size(1);
    }
    if (erase_cpu.defined()) {
      inputs[size_t(i)].erase = erase_cpu.data_ptr<float>() + i * erase_cpu.stride(0);
      inputs[size_t(i)].erase_boxes = erase_cpu.size(1);
    }
  }

  // The batch turn (core/batch_turn.h): concurrent calls (DataLoader workers) would all
  // allocate their batch at once, while the pool, first come first served, decodes one call's samples
  // after the other's; a waiting call's batch (resident when recycled, batch_memory.cpp) would only sit
  // there. So a call waits here, GIL released (torch.ops calls run without it) and holding no lock, until
  // the calls before it have started their last sample; only then does it allocate its batch. The worker
  // that starts this call's last sample passes the turn on (decode_batch's on_last_started), so the next
  // call plans and decodes on the workers this one frees, with no gap between batches; the guard passes
  // it on, at the latest, on any way out of this function. From a pool worker the call takes no turn.
  const std::shared_ptr<core::ThreadPool> pool =
      translate_core_errors("decode_images", [] { return core::global_thread_pool(); });
  core::BatchTurn turn = core::wait_for_batch_turn(*pool);

  const int64_t channels = opt.num_output_channels;
  // NHWC: the slots are written through the strides of an NCHW batch in channels-last memory format, which
  // permuted is the contiguous [N, H, W, C] batch returned.
  const auto format = nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor batch;
  if (pin_memory) {  // torch's caching host allocator
    batch = at::empty({n, channels, height, width}, at::TensorOptions().dtype(out_dtype).pinned_memory(true), format);
  } else {  // returned to the OS when freed, past a small pool of recycled buffers (batch_memory.cpp)
    batch = empty_batch({n, channels, height, width}, out_dtype, format);
  }
  at::Tensor ok = at::empty({n}, at::TensorOptions().dtype(at::kBool));

  std::vector<core::SlotWriter> slots(static_cast<size_t>(n));
  const int64_t elem = batch.element_size();
  for (int64_t i = 0; i < n; ++i) {
    core::SlotWriter& w = slots[size_t(i)];
    w.data = static_cast<uint8_t*>(batch.data_ptr()) + i * batch.stride(0) * elem;
    w.type = opt.out_type;
    w.stride_c = batch.stride(1);
    w.stride_h = batch.stride(2);
    w.stride_w = batch.stride(3);
    w.height = height;
    w.width = width;
    w.channels = int(channels);
    w.gray = opt.gray;
    w.normalize = opt.normalize();
    for (int c = 0; c < int(channels); ++c) {
      w.mean[c] = opt.channel_mean(c);
      w.std[c] = opt.channel_std(c);
    }
  }
  const std::vector<std::string> errors = translate_core_errors("decode_images", [&] {
    return core::decode_batch(inputs, opt, slots, *pool, [&turn] { turn.release(); });
  });
  bool* ok_ptr = ok.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i) {
    ok_ptr[i] = errors[size_t(i)].empty();
    if (strict && !ok_ptr[i]) throw_tagged("DecodeError", {{"sample", i}}, errors[size_t(i)]);
  }
  return {nhwc ? batch.permute({0, 2, 3, 1}) : batch, ok};
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, CPU, m) { m.impl("decode_images", &decode_images); }

}  // namespace spdl_torch::ops
