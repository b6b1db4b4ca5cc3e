// SPDX-License-Identifier: BSD-3-Clause
// The op schemas: the contract of every spdl_torch op. Kernels live in one file per op.
#include <torch/library.h>

TORCH_LIBRARY(spdl_torch, m) {
  m.def("read_file(str path, *, int max_bytes=0) -> Tensor");
  m.def(
      "decode_image(Tensor data, *, str mode=\"RGB\", bool apply_exif_orientation=True, "
      "int max_pixels=178956970, ScalarType? dtype=None) -> Tensor");
  // decode_images: the arguments grouped by stage, as its Python signature (spdl_torch/io/_batch.py).
  m.def(
      "decode_images(Tensor[] data, *, Tensor? seeds=None, bool apply_exif_orientation=True, "
      "int max_pixels=178956970, float dct_min_ratio=2.0, bool partial_decode=True, "
      "int height, int width, str geometry=\"eval\", int resize_shorter=0, int max_size=0, "
      "float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], int[] padding=[], "
      "bool pad_if_needed=False, str interpolation=\"bilinear\", "
      "float hflip_prob=0.0, float vflip_prob=0.0, "
      "Tensor? augment=None, Tensor? erase=None, "
      "str color=\"rgb\", int num_output_channels=3, ScalarType? dtype=None, float[]? mean=None, float[]? std=None, "
      "str dimension_order=\"NCHW\", "
      "bool pin_memory=False, bool strict=True) -> (Tensor, Tensor)");
  m.def(
      "sample_geometry(int seed, int image_height, int image_width, *, int height, int width, str geometry=\"train\", "
      "int resize_shorter=0, int max_size=0, float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], "
      "int[] padding=[], bool pad_if_needed=False, float hflip_prob=0.0, float vflip_prob=0.0) -> int[]");
  m.def("set_num_threads(int n) -> ()");
  m.def("get_num_threads() -> int");
  m.def("set_batch_memory_capacity(int nbytes) -> ()");
  m.def("batch_memory_stats(*, bool reset_peak=False) -> int[]");
  // video
  m.def(
      "video_metadata(Tensor data, *, int stream_index=-1, bool count_frames=False, str seek_mode=\"exact\") -> "
      "(Tensor, Tensor, Tensor, str, str, str)");
  m.def(
      "decode_video_frames(Tensor data, *, int[]? indices=None, float[]? seconds=None, str seek_mode=\"exact\", "
      "int stream_index=-1, int num_ffmpeg_threads=1, bool strict=True, bool apply_rotation=True, bool skip_nonref=True, "
      "int max_pixels=178956970, int max_frames=4096, int max_output_bytes=17179869184) -> (Tensor, Tensor, Tensor)");
  m.def(
      "decode_video_clips(Tensor[] data, *, int num_frames_per_clip, int num_clips=1, int num_indices_between_frames=1, "
      "float seconds_between_frames=0.0, str sampling=\"regular\", int height, int width, str geometry=\"eval\", "
      "int resize_shorter=0, float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], "
      "float hflip_prob=0.0, Tensor? seeds=None, str interpolation=\"bilinear\", ScalarType? dtype=None, "
      "float[]? mean=None, float[]? std=None, str dimension_order=\"NTCHW\", bool pin_memory=False, bool strict=True, "
      "str seek_mode=\"exact\", int num_ffmpeg_threads=1, bool apply_rotation=True, bool skip_nonref=True, "
      "int max_pixels=178956970, int max_frames=4096, int max_output_bytes=17179869184) -> (Tensor, Tensor, Tensor)");
  // Audio (csrc/ops/decode_audio_op.cpp, decode_audio_batch_op.cpp).
  m.def(
      "decode_audio(Tensor data, *, int sample_rate=0, int num_channels=0, float start_seconds=0.0, float? stop_seconds=None, "
      "ScalarType? dtype=None, bool strict=True, int max_samples=1073741824, str seek_mode=\"approximate\") "
      "-> (Tensor, Tensor)");
  m.def(
      "decode_audio_file(str path, *, int sample_rate=0, int num_channels=0, float start_seconds=0.0, float? stop_seconds=None, "
      "ScalarType? dtype=None, bool strict=True, int max_samples=1073741824, str seek_mode=\"approximate\") "
      "-> (Tensor, Tensor)");
  m.def("audio_metadata(Tensor data) -> (int[], str[], float)");
  m.def("audio_metadata_file(str path) -> (int[], str[], float)");
  m.def(
      "decode_audio_batch(Tensor[] data, str[] paths, *, int sample_rate, int num_channels, float duration=-1.0, "
      "float[]? starts=None, Tensor? seeds=None, ScalarType? dtype=None, bool pin_memory=False, bool strict=True, "
      "int max_samples=1073741824, str seek_mode=\"approximate\") -> (Tensor, Tensor, Tensor, Tensor)");
  // The CUDA side (csrc/cuda/; stubs in the CPU variant: csrc/ops/cuda_stubs.cpp).
  m.def("build_info() -> str[]");
  // The augmentation ops' table (csrc/core/augment/op_table.h) as JSON, read by spdl_torch/transforms/_augment_codes.py.
  m.def("augment_op_table() -> str");
  m.def(
      "decode_images_cuda(Tensor[] data, *, int device_index, Tensor? seeds=None, bool apply_exif_orientation=True, "
      "int max_pixels=178956970, int height, int width, str geometry=\"eval\", int resize_shorter=0, "
      "float[] scale=[0.08, 1.0], float[] ratio=[0.75, 1.3333333333333333], str interpolation=\"bilinear\", "
      "float hflip_prob=0.0, ScalarType? dtype=None, float[]? mean=None, float[]? std=None, "
      "str dimension_order=\"NCHW\", bool strict=True) -> (Tensor, Tensor)");
  // normalize_batch keeps the input's memory format (contiguous or channels-last), as the Python normalize.
  m.def("normalize_batch(Tensor batch, *, float[]? mean, float[]? std, ScalarType dtype) -> Tensor");
}
