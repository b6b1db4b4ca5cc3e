// SPDX-License-Identifier: BSD-3-Clause
// The fused batch transform: decode N encoded images, crop, resize, flip and normalize each straight into
// its slot of one caller-provided batch buffer, over the shared thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/batch_options.h"
#include "core/crop_geometry.h"
#include "core/resample.h"
#include "core/thread_pool.h"

namespace spdl_torch::core {

struct SampleInput {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t seed = 0;
  // Optional augmentation program (augment/ops.h): `augment_steps` rows of 8 floats run on the resized
  // uint8 RGB crop before its conversion into the slot, and `erase_boxes` erase rows applied in order to the
  // finished slot. Both valid (augment::validate_program / validate_erase); nullptr: none.
  const float* augment = nullptr;
  int64_t augment_steps = 0;
  const float* erase = nullptr;
  int64_t erase_boxes = 1;
};

// One sample's geometry in its displayed (EXIF-oriented) source: the output-to-source maps and the flip.
struct SampleGeometry {
  AxisMap y;
  AxisMap x;
  bool flip = false;   // horizontal
  bool vflip = false;  // vertical
  // train: the RandomResizedCrop box (source pixels); random_crop: the RandomCrop box in the resized and
  // padded image; eval/resize: the whole image
  CropBox box;
};

// Draws the sample's geometry for a displayed source of src_height x src_width from its seed: the train
// box first (RandomResizedCrop draws; random_crop: top, then left), then the flips (uniform() < hflip_prob,
// then uniform() < vflip_prob; a flip with probability 0 draws nothing). random_crop throws
// InvalidArgument when the crop does not fit the (padded) resized image.
SampleGeometry sample_geometry(const BatchOptions& opt, int64_t src_height, int64_t src_width, int64_t seed);

// sample_geometry for a caller-given image size (random_resized_crop_params): throws InvalidArgument
// unless src_height, src_width >= 1.
SampleGeometry crop_params(const BatchOptions& opt, int64_t src_height, int64_t src_width, int64_t seed);

// Writes sample i into slot(i) for every i. Samples are scheduled largest predicted cost first (JPEG:
// header pixels x DCT scale^2; other formats: encoded bytes). Returns one message per sample: empty when it
// succeeded; else the reason ("JPEG: ..."), and its slot is zero-filled. Never throws for a bad sample; an
// InternalError (a bug, not the data) stops the batch and is rethrown with the sample's index.
// `opt` must be valid (BatchOptions::validate). Two rounds of parallel_for: every header (plan), then every
// sample (decode). on_last_started (optional, must not throw) runs once, when a thread takes the last sample
// of the second round, before decoding it: the batch then queues no more work on the pool (the point where
// decode_images passes its BatchTurn on). It does not run for no samples or when an InternalError stopped
// the work first.
std::vector<std::string> decode_batch(const std::vector<SampleInput>& samples, const BatchOptions& opt,
                                      const std::vector<SlotWriter>& slots, ThreadPool& pool,
                                      const std::function<void()>& on_last_started = nullptr);

}  // namespace spdl_torch::core
