"""The CUDA side of spdl_torch: the transfer stage to the GPU, and the normalisation that runs there after the
copy.

* :class:`DeviceTransfer`, :func:`to_device`: copies on a dedicated stream, one event per batch,
  ``record_stream`` for the caching allocator, ``depth`` batches in flight (``DataLoader(device="cuda")`` uses
  it).
* :func:`normalize`: ``ToDtype`` + ``Normalize`` of uint8 batches on the device.

Which variant the library was built as (CUDA or CPU, nvJPEG or not): :func:`spdl_torch.build_info`. GPU JPEG
decoding is ``spdl_torch.io.decode_images(..., device="cuda")``.
"""

from ._normalize import normalize
from ._transfer import DeviceTransfer, to_device

__all__ = ["DeviceTransfer", "normalize", "to_device"]
