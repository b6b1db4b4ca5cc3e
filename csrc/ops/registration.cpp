// The op schemas: the contract of every spdl_torch op. Kernels live in one file per op.
#include <torch/library.h>

TORCH_LIBRARY(spdl_torch, m) {
  m.def("read_file(str path, *, int max_bytes=0) -> Tensor");
  m.def(
      "decode_image(Tensor data, *, str mode=\"RGB\", bool apply_exif_orientation=True, "
      "int max_pixels=178956970) -> Tensor");
  m.def(
      "decode_images(Tensor[] data, *, int height, int width, str geometry=\"eval\", int resize_shorter=0, "
      "float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], float hflip_prob=0.0, "
      "Tensor? seeds=None, str interpolation=\"bilinear\", ScalarType? dtype=None, float[]? mean=None, "
      "float[]? std=None, bool channels_last=False, bool pin_memory=False, bool strict=True, "
      "bool apply_exif_orientation=True, int max_pixels=178956970, float dct_min_ratio=2.0, bool partial_decode=True) -> (Tensor, Tensor)");
  m.def(
      "random_resized_crop_params(int seed, int height, int width, *, float[] scale=[0.08, 1.0], "
      "float[] ratio=[0.75, 1.3333333333333333], float hflip_prob=0.0) -> int[]");
  m.def("set_num_threads(int n) -> ()");
  m.def("get_num_threads() -> int");
  m.def("set_batch_memory_capacity(int nbytes) -> ()");
  m.def("get_batch_memory_capacity() -> int");
  m.def("batch_memory_stats() -> int[]");
  m.def("reset_batch_memory_peak() -> ()");
  // The CUDA side (csrc/cuda/; stubs in the CPU variant: csrc/ops/cuda_stubs.cpp).
  m.def("build_info() -> str[]");
  m.def(
      "decode_images_cuda(Tensor[] data, *, int device_index, int height, int width, str geometry=\"eval\", "
      "int resize_shorter=0, float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], "
      "float hflip_prob=0.0, Tensor? seeds=None, str interpolation=\"bilinear\", ScalarType? dtype=None, "
      "float[]? mean=None, float[]? std=None, bool channels_last=False, bool strict=True, "
      "bool apply_exif_orientation=True, int max_pixels=178956970) -> (Tensor, Tensor)");
  m.def("normalize_batch(Tensor batch, *, float[]? mean, float[]? std, ScalarType dtype, bool channels_last=False) -> Tensor");
}
