"""Maps the tagged errors of the native ops to Python exceptions that name the sample."""

import re

from .errors import DecodeError

_OS_ERROR = re.compile(r"^\[OSError errno=(\d+)\] ")
_DECODE_ERROR = "[DecodeError] "


def translate(error: RuntimeError, sample: str | None) -> Exception:
    """Returns the exception to raise for ``error`` from a native op, prefixed by ``sample`` (a path or
    ``"<bytes>"``); errors that are not tagged by the ops come back unchanged."""
    message = str(error)
    where = f"{sample}: " if sample else ""
    if message.startswith(_DECODE_ERROR):
        return DecodeError(where + message[len(_DECODE_ERROR) :])
    match = _OS_ERROR.match(message)
    if match:
        return OSError(int(match.group(1)), where + message[match.end() :])
    return error


_SAMPLE = re.compile(r"sample (\d+): ")


def name_sample(error: Exception, names: list) -> Exception:
    """``error`` with its ``sample <i>: `` prefix (a ``decode_images`` DecodeError) replaced by
    ``names[i]: `` when ``names[i]`` is a path (not ``None``); other errors come back unchanged."""
    match = _SAMPLE.match(str(error)) if isinstance(error, DecodeError) else None
    if match is None or int(match.group(1)) >= len(names) or names[int(match.group(1))] is None:
        return error
    return DecodeError(f"{names[int(match.group(1))]}: {str(error)[match.end():]}")
