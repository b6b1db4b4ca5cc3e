"""The CUDA side of spdl_torch: what the build holds, the transfer stage to the GPU, and the normalisation that
runs there after the copy.

* :func:`build_info`, :func:`cuda_build`, :func:`nvjpeg_build`: the CUDA or the CPU variant of the library.
* :class:`DeviceTransfer`, :func:`to_device`: copies on a dedicated stream, one event per batch,
  ``record_stream`` for the caching allocator, ``depth`` batches in flight (``DataLoader(device="cuda")`` uses
  it).
* :func:`normalize`, :func:`split_plan`, :class:`DeviceFinish`: ``ToDtype`` + ``Normalize`` of uint8 batches
  on the device.

GPU JPEG decoding is ``spdl_torch.io.decode_images(..., device="cuda")``.
"""

from ._build import build_info, check_cuda, cuda_build, nvjpeg_build
from ._finish import DeviceFinish, mark_finish, normalize, pending_finish, split_plan
from ._transfer import CudaBackend, DeviceTransfer, InFlight, to_device

__all__ = [
    "CudaBackend", "DeviceFinish", "DeviceTransfer", "InFlight", "build_info", "check_cuda", "cuda_build",
    "mark_finish", "normalize", "nvjpeg_build", "pending_finish", "split_plan", "to_device",
]
