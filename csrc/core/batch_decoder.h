// The fused batch transform: decode N encoded images, crop, resize, flip and normalize each straight into
// its slot of one caller-provided batch buffer, over the shared thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crop_geometry.h"
#include "image_types.h"
#include "resample.h"
#include "thread_pool.h"

namespace spdl_torch::core {

enum class GeometryMode {
  Eval,    // shorter side -> resize_shorter (0: keep), centre crop height x width (torchvision's rules)
  Resize,  // whole image -> height x width
  Train,   // RandomResizedCrop(height x width, scale, ratio)
};

GeometryMode parse_geometry_mode(const std::string& mode);  // "eval", "resize", "train"; else InvalidArgument

struct BatchOptions {
  GeometryMode mode = GeometryMode::Eval;
  int64_t height = 0;
  int64_t width = 0;
  int64_t resize_shorter = 0;
  double scale_lo = 0.08, scale_hi = 1.0;
  double ratio_lo = 3.0 / 4.0, ratio_hi = 4.0 / 3.0;
  double hflip_prob = 0.0;
  ResampleFilter filter = ResampleFilter::Bilinear;
  bool apply_exif_orientation = true;
  int64_t max_pixels = kDefaultMaxPixels;
  // JPEG DCT scaling: decode at the smallest factor f of 1/8, 1/4, 1/2, 1 with f * (source pixels per
  // output pixel) >= min_dct_ratio on both axes; 0 disables it. 2 (default, as Pillow's reducing_gap)
  // keeps an antialiased >= 2x downscale after the DCT scaling: >= 40 dB PSNR against torchvision's
  // full-size resize; 1 is the fastest (about 30-34 dB on photos).
  double min_dct_ratio = 2.0;
  // JPEG without EXIF rotation: decode only the rows and (iMCU-aligned) columns the crop's resize windows
  // read, and no rows below them (libjpeg's jpeg_skip_scanlines / jpeg_crop_scanline). Same pixels as a
  // full decode; false decodes the whole (DCT-scaled) image, for comparison.
  bool partial_decode = true;
};

struct SampleInput {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t seed = 0;
};

// One sample's geometry in its displayed (EXIF-oriented) source: the output-to-source maps and the flip.
struct SampleGeometry {
  AxisMap y;
  AxisMap x;
  bool flip = false;
  CropBox box;  // train: the RandomResizedCrop box; eval/resize: the whole image
};

// Draws the sample's geometry for a displayed source of src_height x src_width from its seed: the train
// box first (RandomResizedCrop draws), then the flip (uniform() < hflip_prob).
SampleGeometry sample_geometry(const BatchOptions& opt, int64_t src_height, int64_t src_width, int64_t seed);

// Writes sample i into slot(i) for every i. Samples are scheduled largest predicted cost first (JPEG:
// header pixels x DCT scale^2; other formats: encoded bytes). Returns one message per sample: empty when it
// succeeded; else the reason ("JPEG: ..."), and its slot is zero-filled. Never throws for a bad sample.
// Two rounds of parallel_for: every header (plan), then every sample (decode). on_last_started (optional,
// must not throw) runs once, when a thread takes the last sample of the second round, before decoding it:
// the batch then queues no more work on the pool (the point where decode_images passes its BatchTurn on).
// It does not run for no samples or when an internal error (not a bad sample) stopped the work first.
std::vector<std::string> decode_batch(const std::vector<SampleInput>& samples, const BatchOptions& opt,
                                      const std::vector<SlotWriter>& slots, ThreadPool& pool,
                                      const std::function<void()>& on_last_started = nullptr);

}  // namespace spdl_torch::core
