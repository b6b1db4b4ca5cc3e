"""The default limits of every decode function and dataset, in one place: the object ``spdl_torch.io.limits``,
whose attributes users read and set as Pillow's ``Image.MAX_IMAGE_PIXELS``; the functions read the value set
there at each call (:func:`default`), so a change applies to every later call."""

from __future__ import annotations

from ._integers import as_integer

__all__ = ["DEFAULTS", "default", "limits"]

# name -> the value at import: the one table the limits object, its repr and the fake kernels' defaults read
DEFAULTS = {
    "image_pixels": 178_956_970,  # where Pillow raises DecompressionBombError: 2 * Image.MAX_IMAGE_PIXELS
    "image_bytes": 0,  # no limit
    "audio_samples": 1 << 30,  # 1 Gi samples: 4 GiB of float32
    "video_frames": 4096,
    "video_output_bytes": 1 << 34,  # 16 GiB
}


class _Limits:
    """The default limits of spdl_torch's decode functions and datasets: what their ``max_*=None`` arguments
    mean, read at each call (also under ``torch.compile``). Set an attribute to change every later call, as
    Pillow's ``Image.MAX_IMAGE_PIXELS``::

        spdl_torch.io.limits.image_pixels = 20_000 * 20_000

    Each value is an int (Python, NumPy or torch integers are taken, stored as ``int``); 0 or less: no limit.

    Attributes:
        image_pixels: width * height, in pixels, of a decoded image or video frame (``max_pixels=None``);
            default 178,956,970, where Pillow raises ``DecompressionBombError``: twice its
            ``Image.MAX_IMAGE_PIXELS`` (``1024 * 1024 * 1024 // 4 // 3``, above which Pillow only warns). Larger
            images raise :class:`~spdl_torch.DecodeError` before any pixel memory is allocated
            (decompression-bomb protection).
        image_bytes: the size, in bytes, of the image files the image datasets and ``decode_image`` of a path
            read at most (``max_bytes=None``); larger files raise ``OSError`` (errno ``EFBIG``) before they are
            read. Default 0: no limit.
        audio_samples: the output of one audio call (``max_samples=None``), in samples over all channels and,
            for ``decode_audio_batch``, over the whole padded batch; default ``2**30`` (1 Gi samples, 4 GiB of
            float32).
        video_frames: the frames one video call decodes (``max_frames=None``); default 4096. A request for
            more raises ``ValueError`` before any frame memory is allocated.
        video_output_bytes: the size, in bytes, of one video call's output tensor (``max_output_bytes=None``);
            default ``2**34`` (16 GiB). A call whose output would be larger (frames x height x width x 3, times
            the element size) raises ``ValueError`` before it is allocated.

    Raises:
        TypeError: setting a value that is not an integer (a bool, a float, a string, ``None``).
        AttributeError: reading, setting or deleting a name that is not one of the limits (a limit cannot be
            deleted: set it to 0 for no limit).
    """

    __slots__ = tuple(DEFAULTS)

    def __init__(self) -> None:
        for name, value in DEFAULTS.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if name not in DEFAULTS:
            raise AttributeError(f"spdl_torch.io.limits has no limit {name!r}; the limits: {', '.join(DEFAULTS)}")
        number = as_integer(value)
        if number is None:
            raise TypeError(f"spdl_torch.io.limits.{name}: expected an int (0 or less: no limit), "
                            f"got {type(value).__name__} {value!r}")
        object.__setattr__(self, name, number)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"spdl_torch.io.limits.{name} cannot be deleted; set it (0 or less: no limit)")

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name):_}" for name in DEFAULTS)
        return f"spdl_torch.io.limits({values})"


#: The one instance: ``spdl_torch.io.limits``.
limits = _Limits()


def default(name: str) -> int:
    """The limit ``name`` (``"image_pixels"``, ...: an attribute of ``spdl_torch.io.limits``) as the user set it,
    read now."""
    return getattr(limits, name)
