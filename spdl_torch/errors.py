"""Exceptions raised by spdl_torch."""

__all__ = ["DecodeError"]


class DecodeError(RuntimeError):
    """An encoded sample could not be decoded.

    Raised by every decode function and loader in spdl_torch. The message names the sample (its path or
    index, when known), the detected format and the decoder's own reason (for example libjpeg's
    ``"Premature end of JPEG file"`` or FFmpeg's ``av_strerror`` text). It is a :class:`RuntimeError`, so
    code that catches ``RuntimeError`` keeps working.
    """
