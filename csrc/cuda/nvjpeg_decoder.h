// SPDX-License-Identifier: BSD-3-Clause
// Batched JPEG decoding with nvJPEG into caller-provided planar RGB device buffers. One decoder per device,
// owned handles (nvJPEG library handle and decode states), calls serialised by a mutex.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spdl_torch::cuda {

struct JpegJob {
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint8_t* planes = nullptr;  // device: 3 planes (R, G, B) of height x width bytes, pitch = width
  int height = 0;             // stored size (nvjpegGetImageInfo)
  int width = 0;
};

class NvjpegDecoder {
 public:
  // The decoder of `device` (created at first use; throws std::runtime_error naming nvJPEG's status).
  static NvjpegDecoder& of_device(int device);

  // Reads the stored size of a JPEG (nvjpegGetImageInfo); false with the reason when nvJPEG refuses it.
  bool image_size(const uint8_t* data, size_t size, int& height, int& width, std::string& why);

  // Decodes every job on `stream` (one batched call; when it fails, one call per job to find the bad
  // ones). Returns one message per job: empty when it decoded.
  std::vector<std::string> decode(std::vector<JpegJob>& jobs, cudaStream_t stream);

  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

 private:
  explicit NvjpegDecoder(int device);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spdl_torch::cuda
