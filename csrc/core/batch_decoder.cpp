// SPDX-License-Identifier: BSD-3-Clause
#include "core/batch_decoder.h"

#include <algorithm>
#include <new>
#include <numeric>
#include <optional>

#include "core/augment/erase.h"
#include "core/augment/ops.h"
#include "core/augment/resample_program.h"
#include "core/detail/jpeg/jpeg_decoder.h"
#include "core/detail/jpeg/jpeg_markers.h"
#include "core/detail/jpeg/jpeg_region_decoder.h"
#include "core/detail/parse/image_format.h"
#include "core/detail/pixels/orientation.h"
#include "core/detail/pixels/pixel_limit.h"
#include "core/errors.h"
#include "core/image_decoder.h"

namespace spdl_torch::core {
namespace {

// torchvision's CenterCrop offset: round((resized - out) / 2), or centred zero padding when out > resized.
int64_t centre_crop_first(int64_t resized, int64_t out) {
  return out > resized ? -((out - resized) / 2) : round_half_even(double(resized - out) / 2.0);
}

}  // namespace

SampleGeometry sample_geometry(const BatchOptions& opt, int64_t h, int64_t w, int64_t seed) {
  SplitMix64 rng(seed);
  SampleGeometry g;
  g.box = {0, 0, h, w};
  switch (opt.geometry) {
    case GeometryMode::Eval: {
      const ResizedSize r = resized_size(h, w, opt.resize_shorter, opt.max_size);
      g.y = window_axis(h, r.height, centre_crop_first(r.height, opt.height));
      g.x = window_axis(w, r.width, centre_crop_first(r.width, opt.width));
      break;
    }
    case GeometryMode::RandomCrop: {
      const ResizedSize r = resized_size(h, w, opt.resize_shorter, opt.max_size);
      const bool pad = opt.padding.size() == 4;
      const CropRange ry = random_crop_range(r.height, pad ? opt.padding[1] : 0, pad ? opt.padding[3] : 0,
                                             opt.pad_if_needed, opt.height);
      const CropRange rx = random_crop_range(r.width, pad ? opt.padding[0] : 0, pad ? opt.padding[2] : 0,
                                             opt.pad_if_needed, opt.width);
      if (ry.offsets < 1 || rx.offsets < 1) {
        throw InvalidArgument("RandomCrop: the crop " + std::to_string(opt.height) + "x" + std::to_string(opt.width) +
                              " is larger than the " + (pad || opt.pad_if_needed ? "padded " : "") + "image (" +
                              std::to_string(ry.padded) + "x" + std::to_string(rx.padded) +
                              " after the resize); torchvision raises here too (pad_if_needed=True pads it)");
      }
      // torchvision draws top, then left (RandomCrop.make_params); a draw is taken even for one offset.
      g.box.top = rng.randint(ry.offsets);
      g.box.left = rng.randint(rx.offsets);
      g.box.height = opt.height;
      g.box.width = opt.width;
      g.y = window_axis(h, r.height, g.box.top - ry.pad_lo);
      g.x = window_axis(w, r.width, g.box.left - rx.pad_lo);
      break;
    }
    case GeometryMode::Resize:
      g.y = resize_axis(h, opt.height);
      g.x = resize_axis(w, opt.width);
      break;
    case GeometryMode::Train:
      g.box = random_resized_crop_box(h, w, opt.scale[0], opt.scale[1], opt.ratio[0], opt.ratio[1], rng);
      g.y = crop_axis(h, g.box.top, g.box.height, opt.height);
      g.x = crop_axis(w, g.box.left, g.box.width, opt.width);
      break;
  }
  g.flip = opt.hflip_prob > 0 && rng.uniform() < opt.hflip_prob;
  g.vflip = opt.vflip_prob > 0 && rng.uniform() < opt.vflip_prob;
  return g;
}

SampleGeometry crop_params(const BatchOptions& opt, int64_t h, int64_t w, int64_t seed) {
  if (h <= 0 || w <= 0) {
    throw InvalidArgument("expected a positive image size, got " + std::to_string(h) + "x" + std::to_string(w));
  }
  return sample_geometry(opt, h, w, seed);
}

namespace {

// resample_into, through the sample's augmentation program when it has one (the plain path otherwise:
// byte-identical and as fast as without programs).
void resample_sample(const SampleInput& in, const uint8_t* src, int64_t src_height, int64_t src_width,
                     int64_t src_row_bytes, const AxisWeights& wy, const AxisWeights& wx, const SlotWriter& out) {
  if (in.augment != nullptr && augment::has_program(in.augment, in.augment_steps)) {
    augment::resample_with_program(src, src_height, src_width, src_row_bytes, wy, wx, out, in.augment,
                                   in.augment_steps);
  } else {
    resample_into(src, src_height, src_width, src_row_bytes, wy, wx, out);
  }
}

// What phase one learns about a sample from its header.
struct SamplePlan {
  bool jpeg_fast = false;  // non-CMYK JPEG: scaled decode
  JpegHeader header;
  int orientation = 1;
  JpegScale scale;
  SampleGeometry geometry;  // jpeg_fast: in full-size displayed (EXIF-oriented) coordinates
  double cost = 0;
};

SamplePlan plan_sample(const SampleInput& in, const BatchOptions& opt) {
  SamplePlan plan;
  plan.cost = double(in.size);
  if (in.size == 0) throw DecodeError("empty data (0 bytes): nothing to decode");
  if (detect_image_format(in.data, in.size) != ImageFormat::JPEG) return plan;
  plan.header = read_jpeg_header(in.data, in.size);
  detail::check_pixel_limit("JPEG", plan.header.width, plan.header.height, opt.max_pixels);
  if (plan.header.cmyk) return plan;
  plan.jpeg_fast = true;
  plan.orientation = opt.apply_exif_orientation ? jpeg_exif_orientation(in.data, in.size) : 1;
  const bool swap = orientation_swaps_axes(plan.orientation);
  const int64_t h = swap ? plan.header.width : plan.header.height;
  const int64_t w = swap ? plan.header.height : plan.header.width;
  plan.geometry = sample_geometry(opt, h, w, in.seed);
  const SampleGeometry& g = plan.geometry;
  // The smallest factor that keeps at least dct_min_ratio source pixels per output pixel on both axes.
  // The nearest filters pick source pixels: only a full-size decode has them.
  const bool full_size = opt.dct_min_ratio <= 0 || opt.filter == ResampleFilter::Nearest ||
                         opt.filter == ResampleFilter::NearestExact;
  const double need = full_size ? 1.0 + 1e-9
                                             : std::max(opt.dct_min_ratio / g.y.scale, opt.dct_min_ratio / g.x.scale);
  for (const JpegScale& s : jpeg_downscale_factors()) {
    plan.scale = s;
    if (s.value() >= need) break;
  }
  // The whole-image decode (TurboJPEG) and the partial one (libjpeg) then use the same factor.
  plan.scale = tj_effective_scale(plan.header.width, plan.header.height, plan.scale);
  plan.cost = double(plan.header.width) * double(plan.header.height) * plan.scale.value() * plan.scale.value();
  return plan;
}

// An RGB HWC image. JPEG samples decode into per-thread buffers reused across samples and calls (no
// page faults and zeroing per sample); buffers above kKeepBytes are released after use.
struct Image {
  const uint8_t* pixels = nullptr;
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> owned;  // non-JPEG formats
};

constexpr size_t kKeepBytes = size_t(64) << 20;

struct ThreadBuffers {
  std::vector<uint8_t> decoded;
  std::vector<uint8_t> oriented;
};

ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

void trim(std::vector<uint8_t>& buffer) {
  if (buffer.capacity() > kKeepBytes) std::vector<uint8_t>().swap(buffer);
}

Image decode_full(const SampleInput& in, const BatchOptions& opt) {
  DecodeOptions d;
  d.mode = ColorMode::RGB;
  d.apply_exif_orientation = opt.apply_exif_orientation;
  d.max_pixels = opt.max_pixels;
  Image img;
  decode_image(in.data, in.size, d, [&](const ImageShape& s) {
    if (s.channels != 3 || s.type != ElemType::UInt8) {
      throw InternalError("decode_image returned " + std::to_string(s.channels) + " channels for RGB");
    }
    img.height = s.height;
    img.width = s.width;
    img.owned.resize(size_t(s.num_bytes()));
    return img.owned.data();
  });
  if (img.owned.empty()) throw InternalError("decode_image produced no image");
  img.pixels = img.owned.data();
  return img;
}

// JPEG without EXIF rotation: decode only the rows and columns the resize windows read (libjpeg's
// partial decode), at the plan's DCT scale, and resample from that region.
void process_jpeg_region(const SampleInput& in, const SamplePlan& plan, const BatchOptions& opt,
                         const SlotWriter& out, ThreadBuffers& buffers) {
  const int64_t full_h = plan.header.height, full_w = plan.header.width;
  const int64_t h = jpeg_scaled_size(full_h, plan.scale), w = jpeg_scaled_size(full_w, plan.scale);
  SampleGeometry g = plan.geometry;  // orientation 1: displayed == stored
  g.y = scale_axis(g.y, full_h, h);
  g.x = scale_axis(g.x, full_w, w);
  AxisWeights wy(g.y, h, opt.height, opt.filter, g.vflip);
  AxisWeights wx(g.x, w, opt.width, opt.filter, g.flip);
  const auto decode_whole = [&] {
    if (buffers.decoded.size() < size_t(h * w * 3)) buffers.decoded.resize(size_t(h * w * 3));
    decode_jpeg_rgb_scaled(in.data, in.size, plan.header, plan.scale, buffers.decoded.data());
    resample_sample(in, buffers.decoded.data(), h, w, w * 3, wy, wx, out);
  };
  if (wy.src_hi <= wy.src_lo || wx.src_hi <= wx.src_lo) {
    // Every output pixel is padding: decode the whole scaled image all the same, so corrupt data is
    // reported as for any other sample.
    decode_whole();
    return;
  }
  const JpegRegion want{wy.src_lo, wx.src_lo, wy.src_hi - wy.src_lo, wx.src_hi - wx.src_lo};
  std::optional<JpegRegion> region;
  try {
    region = decode_jpeg_rgb_region(in.data, in.size, plan.header, plan.scale, want, buffers.decoded);
  } catch (const DecodeError&) {
    // The whole-image decoder (TurboJPEG) decides a failure: it accepts some files libjpeg's RGB request
    // refuses (an unusual colour space), and it is the reference the partial decode equals. Only bad
    // files pay for the second attempt; its DecodeError is the one reported.
  }
  if (!region) {  // failed above, or a stream the partial decode does not vouch for (arithmetic coding, a
                  // restart marker in the last iMCU row)
    decode_whole();
    return;
  }
  const JpegRegion& got = *region;
  wy.shift(got.top);
  wx.shift(got.left);
  resample_sample(in, buffers.decoded.data(), got.height, got.width, got.width * 3, wy, wx, out);
}

void process_sample(const SampleInput& in, const SamplePlan& plan, const BatchOptions& opt, const SlotWriter& out) {
  Image img;
  SampleGeometry g;
  ThreadBuffers& buffers = thread_buffers();
  if (plan.jpeg_fast && plan.orientation == 1 && opt.partial_decode) {
    process_jpeg_region(in, plan, opt, out, buffers);
    trim(buffers.decoded);
    return;
  }
  if (plan.jpeg_fast) {
    ImageShape stored;
    stored.height = int(jpeg_scaled_size(plan.header.height, plan.scale));
    stored.width = int(jpeg_scaled_size(plan.header.width, plan.scale));
    stored.channels = 3;
    const size_t bytes = size_t(stored.num_bytes());
    if (buffers.decoded.size() < bytes) buffers.decoded.resize(bytes);
    decode_jpeg_rgb_scaled(in.data, in.size, plan.header, plan.scale, buffers.decoded.data());
    const ImageShape shown = oriented_shape(stored, plan.orientation);
    if (plan.orientation == 1) {
      img.pixels = buffers.decoded.data();
    } else {
      if (buffers.oriented.size() < bytes) buffers.oriented.resize(bytes);
      apply_orientation(buffers.decoded.data(), stored, plan.orientation, buffers.oriented.data());
      img.pixels = buffers.oriented.data();
    }
    img.height = shown.height;
    img.width = shown.width;
    // The plan's geometry (full-size displayed coordinates), mapped onto the scaled image.
    const bool swap = orientation_swaps_axes(plan.orientation);
    const int64_t full_h = swap ? plan.header.width : plan.header.height;
    const int64_t full_w = swap ? plan.header.height : plan.header.width;
    g = plan.geometry;
    g.y = scale_axis(g.y, full_h, img.height);
    g.x = scale_axis(g.x, full_w, img.width);
  } else {
    img = decode_full(in, opt);
    g = sample_geometry(opt, img.height, img.width, in.seed);
  }
  const AxisWeights wy(g.y, img.height, opt.height, opt.filter, g.vflip);
  const AxisWeights wx(g.x, img.width, opt.width, opt.filter, g.flip);
  resample_sample(in, img.pixels, img.height, img.width, img.width * 3, wy, wx, out);
  trim(buffers.decoded);
  trim(buffers.oriented);
}

}  // namespace

std::vector<std::string> decode_batch(const std::vector<SampleInput>& samples, const BatchOptions& opt,
                                      const std::vector<SlotWriter>& slots, ThreadPool& pool,
                                      const std::function<void()>& on_last_started) {
  if (slots.size() != samples.size()) {
    throw InvalidArgument("decode_batch: expected one slot per sample, got " + std::to_string(slots.size()) +
                          " slots for " + std::to_string(samples.size()) + " samples");
  }
  const int64_t n = int64_t(samples.size());
  std::vector<SamplePlan> plans(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  auto guarded = [&](int64_t i, auto&& fn) {
    try {
      fn();
    } catch (const InternalError& e) {
      if (e.sample() >= 0) throw;
      throw InternalError(e.what(), i);  // a bug, not a bad sample: stops the batch (parallel_for rethrows)
    } catch (const std::bad_alloc&) {
      errors[size_t(i)] = "out of memory while decoding";
    } catch (const std::exception& e) {
      errors[size_t(i)] = e.what();
      if (errors[size_t(i)].empty()) errors[size_t(i)] = "unknown error";
    }
  };
  // Phase one: headers, geometry and DCT scale, cost. Cheap; parallel all the same.
  pool.parallel_for(n, [&](int64_t i) { guarded(i, [&] { plans[size_t(i)] = plan_sample(samples[size_t(i)], opt); }); });
  // Phase two: largest predicted cost first; ties by index, so the order is deterministic.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return plans[size_t(a)].cost > plans[size_t(b)].cost; });
  pool.parallel_for(order, [&](int64_t i) {
    if (errors[size_t(i)].empty()) {
      guarded(i, [&] {
        const SampleInput& in = samples[size_t(i)];
        process_sample(in, plans[size_t(i)], opt, slots[size_t(i)]);
        for (int64_t b = 0; in.erase != nullptr && b < in.erase_boxes; ++b) {
          augment::erase(in.erase + b * augment::kEraseColumns, in.seed, slots[size_t(i)], b);
        }
      });
    }
    if (!errors[size_t(i)].empty()) slots[size_t(i)].zero();
  }, on_last_started);
  return errors;
}

}  // namespace spdl_torch::core
