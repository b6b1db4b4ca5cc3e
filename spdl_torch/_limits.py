"""The default limits of every decode function and dataset, in one place. Users read and set them as
``spdl_torch.io.MAX_*`` (as Pillow's ``Image.MAX_IMAGE_PIXELS``); the functions read the value set there at each
call (:func:`default`), so a change applies to every later call."""

from __future__ import annotations

import sys

__all__ = ["MAX_AUDIO_SAMPLES", "MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "MAX_VIDEO_FRAMES", "MAX_VIDEO_OUTPUT_BYTES",
           "default"]

#: Width * height of a decoded image or video frame (``max_pixels=None``), Pillow's ``Image.MAX_IMAGE_PIXELS``
#: (``1024 * 1024 * 1024 // 4 // 3``); larger images raise :class:`~spdl_torch.DecodeError` before any pixel
#: memory is allocated (decompression-bomb protection).
MAX_IMAGE_PIXELS = 178_956_970

#: The file size (bytes) the image datasets read at most (``max_bytes=None``) and ``decode_image`` reads of a
#: path: larger files raise ``OSError`` (errno ``EFBIG``) before they are read; 0 or less: no limit (the default).
MAX_IMAGE_BYTES = 0

#: The output of one audio call (``max_samples=None``), in samples over all channels and, for
#: ``decode_audio_batch``, over the whole padded batch: 1 Gi samples, 4 GiB of float32.
MAX_AUDIO_SAMPLES = 1 << 30

#: The frames one video call decodes (``max_frames=None``): a request for more raises ``ValueError`` before any
#: frame memory is allocated.
MAX_VIDEO_FRAMES = 4096

#: The bytes of one video call's output tensor (``max_output_bytes=None``): 16 GiB. A call whose output would be
#: larger (frames x height x width x 3, times the element size) raises ``ValueError`` before it is allocated.
MAX_VIDEO_OUTPUT_BYTES = 1 << 34


_DEFAULTS = {"MAX_AUDIO_SAMPLES": MAX_AUDIO_SAMPLES, "MAX_IMAGE_BYTES": MAX_IMAGE_BYTES,
             "MAX_IMAGE_PIXELS": MAX_IMAGE_PIXELS, "MAX_VIDEO_FRAMES": MAX_VIDEO_FRAMES,
             "MAX_VIDEO_OUTPUT_BYTES": MAX_VIDEO_OUTPUT_BYTES}


def default(name: str) -> int:
    """The limit ``name`` (``"MAX_IMAGE_PIXELS"``, ...) as the user set it on ``spdl_torch.io``, read now (also
    under ``torch.compile``)."""
    io = sys.modules.get("spdl_torch.io")
    return getattr(io, name) if io is not None else _DEFAULTS[name]
