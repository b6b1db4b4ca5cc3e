// SPDX-License-Identifier: BSD-3-Clause
#include "core/detail/ffmpeg/swr_pool.h"

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace spdl_torch::core::detail {
namespace {

struct Config {
  OwnedChannelLayout out, in;
  AVSampleFormat out_format = AV_SAMPLE_FMT_NONE, in_format = AV_SAMPLE_FMT_NONE;
  int out_rate = 0, in_rate = 0;

  Config(const AVChannelLayout& o, AVSampleFormat of, int orate, const AVChannelLayout& i, AVSampleFormat ifmt,
         int irate)
      : out_format(of), in_format(ifmt), out_rate(orate), in_rate(irate) {
    if (av_channel_layout_copy(&out.layout, &o) < 0 || av_channel_layout_copy(&in.layout, &i) < 0) {
      throw std::bad_alloc();
    }
  }
  bool same(const AVChannelLayout& o, AVSampleFormat of, int orate, const AVChannelLayout& i, AVSampleFormat ifmt,
            int irate) const {
    return of == out_format && ifmt == in_format && orate == out_rate && irate == in_rate &&
           av_channel_layout_compare(&o, &out.layout) == 0 && av_channel_layout_compare(&i, &in.layout) == 0;
  }
};

struct Kept {
  std::unique_ptr<Config> config;
  SwrContextPtr context;
};

std::vector<Kept>& kept() {
  thread_local std::vector<Kept> pool;
  return pool;
}

}  // namespace

SwrContextPtr acquire_swr(const AVChannelLayout& out, AVSampleFormat out_format, int out_rate,
                          const AVChannelLayout& in, AVSampleFormat in_format, int in_rate) {
  std::vector<Kept>& pool = kept();
  SwrContextPtr ctx;
  for (size_t k = 0; k < pool.size(); ++k) {
    if (pool[k].config->same(out, out_format, out_rate, in, in_format, in_rate)) {
      ctx = std::move(pool[k].context);
      pool.erase(pool.begin() + std::ptrdiff_t(k));
      break;
    }
  }
  if (!ctx) {
    SwrContext* raw = nullptr;
    // (libswresample 4's declaration takes the layouts non-const; it only reads them)
    const int err = swr_alloc_set_opts2(&raw, const_cast<AVChannelLayout*>(&out), out_format, out_rate,
                                        const_cast<AVChannelLayout*>(&in), in_format, in_rate, 0, nullptr);
    ctx.reset(raw);
    if (err < 0) throw_ffmpeg_error("cannot configure the resampler", err);
  }
  const int err = swr_init(ctx.get());  // a kept context: its state reset, its filter bank kept
  if (err < 0) throw_ffmpeg_error("cannot initialise the resampler", err);
  return ctx;
}

void release_swr(SwrContextPtr context, const AVChannelLayout& out, AVSampleFormat out_format, int out_rate,
                 const AVChannelLayout& in, AVSampleFormat in_format, int in_rate) {
  if (!context) return;
  std::vector<Kept>& pool = kept();
  if (pool.size() >= kSwrPoolSize) pool.erase(pool.begin());
  Kept k;
  k.config = std::make_unique<Config>(out, out_format, out_rate, in, in_format, in_rate);
  k.context = std::move(context);
  pool.push_back(std::move(k));
}

}  // namespace spdl_torch::core::detail
