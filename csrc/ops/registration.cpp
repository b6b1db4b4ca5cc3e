// The op schemas: the contract of every spdl_torch op. Kernels live in one file per op.
#include <torch/library.h>

TORCH_LIBRARY(spdl_torch, m) {
  m.def("read_file(str path) -> Tensor");
  m.def(
      "decode_image(Tensor data, *, str mode=\"RGB\", bool apply_exif_orientation=True, "
      "int max_pixels=178956970) -> Tensor");
}
