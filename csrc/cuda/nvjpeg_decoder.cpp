// SPDX-License-Identifier: BSD-3-Clause
#include "cuda/nvjpeg_decoder.h"

#ifdef SPDL_TORCH_WITH_NVJPEG

#include <nvjpeg.h>

#include <map>
#include <mutex>
#include <stdexcept>

namespace spdl_torch::cuda {
namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported by nvJPEG";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure (out of memory)";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
    default: return "unknown status";
  }
}

void check(nvjpegStatus_t s, const char* what) {
  if (s != NVJPEG_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("nvJPEG: ") + what + " failed: " + status_name(s) + " (" +
                             std::to_string(int(s)) + ")");
  }
}

struct HandleDeleter {
  void operator()(nvjpegHandle* h) const { nvjpegDestroy(h); }
};
struct StateDeleter {
  void operator()(nvjpegJpegState* s) const { nvjpegJpegStateDestroy(s); }
};
using HandlePtr = std::unique_ptr<nvjpegHandle, HandleDeleter>;
using StatePtr = std::unique_ptr<nvjpegJpegState, StateDeleter>;

StatePtr make_state(nvjpegHandle_t handle) {
  nvjpegJpegState_t s = nullptr;
  check(nvjpegJpegStateCreate(handle, &s), "nvjpegJpegStateCreate");
  return StatePtr(s);
}

nvjpegImage_t planar(const JpegJob& job) {
  nvjpegImage_t img{};
  const size_t plane = size_t(job.height) * size_t(job.width);
  for (int c = 0; c < 3; ++c) {
    img.channel[c] = job.planes + size_t(c) * plane;
    img.pitch[c] = size_t(job.width);
  }
  return img;
}

}  // namespace

struct NvjpegDecoder::Impl {
  std::mutex mu;
  HandlePtr handle;
  StatePtr batched;  // nvjpegDecodeBatched's state
  StatePtr single;   // nvjpegDecode's state (the per-job retry)
  int batch_size = 0;
};

NvjpegDecoder::NvjpegDecoder(int device) : impl_(std::make_unique<Impl>()) {
  cudaSetDevice(device);
  nvjpegHandle_t h = nullptr;
  check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &h), "nvjpegCreateEx");
  impl_->handle = HandlePtr(h);
  impl_->batched = make_state(h);
  impl_->single = make_state(h);
}

NvjpegDecoder::~NvjpegDecoder() = default;

NvjpegDecoder& NvjpegDecoder::of_device(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<NvjpegDecoder>>* decoders = new std::map<int, std::unique_ptr<NvjpegDecoder>>;
  const std::lock_guard<std::mutex> lock(mu);
  auto& d = (*decoders)[device];  // never destroyed: the CUDA context may be gone at exit
  if (!d) d.reset(new NvjpegDecoder(device));
  return *d;
}

bool NvjpegDecoder::image_size(const uint8_t* data, size_t size, int& height, int& width, std::string& why) {
  int components = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {};
  int heights[NVJPEG_MAX_COMPONENT] = {};
  const std::lock_guard<std::mutex> lock(impl_->mu);
  const nvjpegStatus_t s =
      nvjpegGetImageInfo(impl_->handle.get(), data, size, &components, &subsampling, widths, heights);
  if (s != NVJPEG_STATUS_SUCCESS) {
    why = std::string("nvJPEG: ") + status_name(s);
    return false;
  }
  height = heights[0];
  width = widths[0];
  return true;
}

std::vector<std::string> NvjpegDecoder::decode(std::vector<JpegJob>& jobs, cudaStream_t stream) {
  std::vector<std::string> errors(jobs.size());
  if (jobs.empty()) return errors;
  std::vector<const unsigned char*> data;
  std::vector<size_t> sizes;
  std::vector<nvjpegImage_t> images;
  for (const JpegJob& j : jobs) {
    data.push_back(j.data);
    sizes.push_back(j.size);
    images.push_back(planar(j));
  }
  const std::lock_guard<std::mutex> lock(impl_->mu);
  nvjpegHandle_t h = impl_->handle.get();
  if (impl_->batch_size != int(jobs.size())) {
    check(nvjpegDecodeBatchedInitialize(h, impl_->batched.get(), int(jobs.size()), 1, NVJPEG_OUTPUT_RGB),
          "nvjpegDecodeBatchedInitialize");
    impl_->batch_size = int(jobs.size());
  }
  if (nvjpegDecodeBatched(h, impl_->batched.get(), data.data(), sizes.data(), images.data(), stream) ==
      NVJPEG_STATUS_SUCCESS) {
    return errors;
  }
  impl_->batch_size = 0;  // re-initialise the batched state next time
  for (size_t i = 0; i < jobs.size(); ++i) {
    const nvjpegStatus_t s = nvjpegDecode(h, impl_->single.get(), data[i], sizes[i], NVJPEG_OUTPUT_RGB, &images[i],
                                          stream);
    if (s != NVJPEG_STATUS_SUCCESS) errors[i] = std::string("JPEG (nvJPEG): ") + status_name(s);
  }
  return errors;
}

}  // namespace spdl_torch::cuda

#endif  // SPDL_TORCH_WITH_NVJPEG
