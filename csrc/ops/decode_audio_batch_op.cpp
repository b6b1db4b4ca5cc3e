// SPDX-License-Identifier: BSD-3-Clause
// decode_audio_batch: B audio inputs (bytes or paths) -> one padded [B, C, N] batch plus lengths, offsets and
// an ok mask, written into the slots by the shared native pool (core/audio_batch.h). Paths may come without
// any tensor input, so the kernel sits under BackendSelect.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/audio_batch.h"
#include "core/batch_turn.h"
#include "core/thread_pool.h"
#include "ops/audio_options.h"
#include "ops/batch_memory.h"
#include "ops/error_translation.h"

namespace spdl_torch::ops {
namespace {

using Batch = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

Batch decode_audio_batch(at::TensorList data, const std::vector<std::string>& paths, int64_t sample_rate,
                         int64_t num_channels, double duration, c10::optional<at::ArrayRef<double>> starts,
                         const c10::optional<at::Tensor>& seeds, c10::optional<at::ScalarType> dtype, bool pin_memory,
                         bool strict, int64_t max_samples, c10::string_view seek_mode) {
  constexpr const char* op = "decode_audio_batch";
  TORCH_CHECK_VALUE(data.empty() || paths.empty(), op, ": expected either data or paths, got ", data.size(),
                    " tensors and ", paths.size(), " paths");
  const int64_t n = int64_t(data.empty() ? paths.size() : data.size());
  TORCH_CHECK_VALUE(n >= 1, op, ": expected at least one input");
  core::AudioBatchOptions opt;
  TORCH_CHECK_VALUE(sample_rate >= 1 && sample_rate <= core::kMaxAudioSampleRate, op,
                    ": expected sample_rate in [1, ", core::kMaxAudioSampleRate, "], got ", sample_rate);
  TORCH_CHECK_VALUE(num_channels >= 1 && num_channels <= core::kMaxAudioChannels, op,
                    ": expected num_channels in [1, ", core::kMaxAudioChannels, "], got ", num_channels);
  opt.sample_rate = int(sample_rate);
  opt.num_channels = int(num_channels);
  opt.type = audio_sample_type(dtype, op);
  opt.duration = duration;
  opt.random_crop = seeds.has_value();
  opt.strict = strict;
  opt.max_samples = max_samples;
  translate_core_errors(op, [&] {
    opt.seek_mode = core::parse_audio_seek_mode(std::string(seek_mode));
    opt.validate();
  });
  TORCH_CHECK_VALUE(!(starts.has_value() && seeds.has_value()), op, ": expected starts or seeds, not both");
  TORCH_CHECK_VALUE(!starts.has_value() || duration > 0, op, ": starts needs a duration > 0");
  TORCH_CHECK_VALUE(!starts.has_value() || int64_t(starts->size()) == n, op, ": expected ", n, " starts, got ",
                    starts.has_value() ? starts->size() : 0);
  at::Tensor seeds_cpu;
  if (seeds.has_value()) {
    TORCH_CHECK_VALUE(seeds->scalar_type() == at::kLong && seeds->dim() == 1 && seeds->numel() == n, op,
                      ": expected seeds as an int64 tensor of shape [", n, "], got ", seeds->scalar_type(),
                      " of shape ", seeds->sizes());
    seeds_cpu = seeds->to(at::kCPU).contiguous();
  }
  TORCH_CHECK(!pin_memory || at::globalContext().hasCUDA(), op,
              ": pin_memory=True needs a CUDA runtime, none is available");

  std::vector<core::AudioBatchItem> items(static_cast<size_t>(n));
  std::vector<at::Tensor> keep(data.size());
  for (int64_t i = 0; i < n; ++i) {
    core::AudioBatchItem& item = items[size_t(i)];
    if (!data.empty()) {
      const std::string what = std::string(op) + " (sample " + std::to_string(i) + ")";
      check_encoded_bytes(data[size_t(i)], what.c_str());
      keep[size_t(i)] = data[size_t(i)].contiguous();
      item.source = audio_bytes_source(keep[size_t(i)]);
    } else {
      item.source = core::MediaSource::from_path(paths[size_t(i)]);
    }
    if (starts.has_value()) {
      const double s = (*starts)[size_t(i)];
      TORCH_CHECK_VALUE(std::isfinite(s) && s >= 0 && s <= 1e9, op, ": expected starts >= 0 seconds, got ", s,
                        " (sample ", i, ")");
      item.start = s;
    }
    if (seeds_cpu.defined()) item.seed = seeds_cpu.data_ptr<int64_t>()[i];
  }

  // The batch turn (core/batch_turn.h), as in decode_images: allocate only once the calls before this one
  // have started their last sample.
  const std::shared_ptr<core::ThreadPool> pool = translate_core_errors(op, [] { return core::global_thread_pool(); });
  core::BatchTurn turn = core::wait_for_batch_turn(*pool);
  const at::ScalarType out_dtype = audio_scalar_type(opt.type);
  at::Tensor batch;
  auto allocate = [&](int64_t len) {
    if (pin_memory) {
      batch = at::empty({n, num_channels, len}, at::TensorOptions().dtype(out_dtype).pinned_memory(true));
    } else {
      batch = empty_batch({n, num_channels, len}, out_dtype, at::MemoryFormat::Contiguous);
    }
    core::AudioSlots slots;
    slots.data = static_cast<uint8_t*>(batch.data_ptr());
    slots.stride_b = batch.stride(0);
    slots.stride_c = batch.stride(1);
    slots.length = len;
    return slots;
  };
  const core::AudioBatchResult result = translate_core_errors(
      op, [&] { return core::decode_audio_batch(items, opt, allocate, *pool, [&turn] { turn.release(); }); });
  turn.release();
  at::Tensor lengths = at::empty({n}, at::TensorOptions().dtype(at::kLong));
  at::Tensor offsets = at::empty({n}, at::TensorOptions().dtype(at::kLong));
  at::Tensor ok = at::empty({n}, at::TensorOptions().dtype(at::kBool));
  for (int64_t i = 0; i < n; ++i) {
    lengths.data_ptr<int64_t>()[i] = result.lengths[size_t(i)];
    offsets.data_ptr<int64_t>()[i] = result.offsets[size_t(i)];
    const std::string& error = result.errors[size_t(i)];
    ok.data_ptr<bool>()[i] = error.empty();
    if (!strict || error.empty()) continue;
    // An input that could not be opened is an OSError (FileNotFoundError, ...) as in decode_audio.
    if (result.io_errno[size_t(i)] >= 0) throw_tagged("OSError", {{"sample", i}, {"errno", result.io_errno[size_t(i)]}}, error);
    throw_tagged("DecodeError", {{"sample", i}}, error);
  }
  return {batch, lengths, offsets, ok};
}

}  // namespace

TORCH_LIBRARY_IMPL(spdl_torch, BackendSelect, m) { m.impl("decode_audio_batch", &decode_audio_batch); }

}  // namespace spdl_torch::ops
