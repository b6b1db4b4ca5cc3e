"""The one place where the tagged errors of the native ops are parsed and turned into Python exceptions.

A native op reports a failure as a ``RuntimeError`` whose message starts with a tag (built in C++ by
``csrc/ops/error_translation.cpp``)::

    [<Kind>( <key>=<value>)*] <reason>

``Kind`` is ``DecodeError`` (the data cannot be decoded), ``OSError`` (a file cannot be read; key
``errno``) or ``InternalError`` (a bug in spdl_torch); key ``sample`` is the index of the sample in a
batch op's input. Values are decimal integers. :class:`DecodeError` is ``spdl_torch.DecodeError``;
:func:`from_op_error` is ``spdl_torch.deploy.from_op_error`` (for the ops called directly); :class:`InternalError`
(a ``RuntimeError``) is raised, not exported: it is no error of the data, so nothing catches it but as a
``RuntimeError``.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["DecodeError", "InternalError", "OpErrorTag", "from_op_error", "name_sample", "parse_tag", "translate"]

KINDS = ("DecodeError", "OSError", "InternalError")

# At the start of the message, or of a line of it ("RuntimeError: [DecodeError] ..." inside the traceback
# text that TorchScript's interpreter wraps around an op's error).
_TAG = re.compile(r"(?:^|\n)(?:RuntimeError: )?\[(DecodeError|OSError|InternalError)((?: [a-z_]+=-?[0-9]+)*)\] ")
_FIELD = re.compile(r" ([a-z_]+)=(-?[0-9]+)")


@dataclasses.dataclass(frozen=True)
class OpErrorTag:
    """A parsed tag: ``kind`` (one of ``DecodeError``, ``OSError``, ``InternalError``), its integer
    ``fields`` (``errno``, ``sample``) and the ``reason`` text after it."""

    kind: str
    fields: dict[str, int]
    reason: str


def parse_tag(message: str) -> OpErrorTag | None:
    """The tag of a native op's error message, or ``None`` when the message carries none."""
    match = _TAG.search(message)
    if match is None:
        return None
    fields = {key: int(value) for key, value in _FIELD.findall(match.group(2))}
    reason = message[match.end():]
    if match.start() > 0:  # inside a traceback text: the reason is the rest of that line
        reason = reason.split("\n", 1)[0]
    return OpErrorTag(match.group(1), fields, reason)


class DecodeError(RuntimeError):
    """An encoded sample could not be decoded.

    Raised by every decode function and loader in spdl_torch. The message names the sample (its path or
    index, when known), the detected format and the decoder's own reason (for example libjpeg's
    ``"Premature end of JPEG file"`` or FFmpeg's ``av_strerror`` text). It is a :class:`RuntimeError`, so
    code that catches ``RuntimeError`` keeps working.

    Attributes:
        path: the sample's file path (``str``), or ``None`` when it was not given as a path or is unknown.
        sample_index: the sample's index (``int``) in the input of a batch call (``decode_images``, a
            fused dataset's batch), or ``None`` for a single-image call or when unknown.
        reason: the decoder's reason: the message without the sample's name in front.
    """

    def __init__(self, *args, path: str | None = None, sample_index: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(*args)
        self.path = path
        self.sample_index = sample_index
        self.reason = reason if reason is not None else (str(args[0]) if args else "")


class InternalError(RuntimeError):
    """A broken invariant inside spdl_torch: a bug of the library, never a property of the data (report
    it). A batch call raises it instead of skipping the sample as corrupt.

    Attributes:
        sample_index: the index of the sample being processed in a batch call, or ``None``.
        reason: the native code's description of what went wrong.
    """

    def __init__(self, reason: str = "", *, sample_index: int | None = None) -> None:
        where = f"sample {sample_index}: " if sample_index is not None else ""
        super().__init__(f"internal error in spdl_torch (this is a bug; please report it): {where}{reason}")
        self.sample_index = sample_index
        self.reason = reason


DecodeError.__module__ = "spdl_torch"


def _exception(tag: OpErrorTag, label: str | None, path: str | None) -> Exception:
    index = tag.fields.get("sample")
    if label is None and index is not None:
        label = f"sample {index}"
    where = f"{label}: " if label else ""
    if tag.kind == "DecodeError":
        return DecodeError(where + tag.reason, path=path, sample_index=index, reason=tag.reason)
    if tag.kind == "OSError":
        return OSError(tag.fields.get("errno", 0), where + tag.reason)
    return InternalError(tag.reason, sample_index=index)


def from_op_error(error: BaseException) -> BaseException:
    """The spdl_torch exception that a ``RuntimeError`` from ``torch.ops.spdl_torch.*`` stands for.

    Ops called directly (and the :mod:`spdl_torch.deploy` modules, which call them) raise a plain
    ``RuntimeError`` whose message starts with a tag, ``[<Kind>( <key>=<value>)*] <reason>``, e.g.
    ``[DecodeError sample=2] JPEG: Premature end of JPEG file``. This returns, for a tagged error:

    * ``DecodeError``: a :class:`DecodeError` with message ``<reason>``, or ``sample <i>: <reason>`` and
      ``sample_index == i`` when the tag has ``sample=<i>``;
    * ``OSError``: an :class:`OSError` (``FileNotFoundError``, ... by its ``errno``) with message ``<reason>``;
    * ``InternalError``: an :class:`InternalError`.

    Any other exception (an untagged error, a ``ValueError`` for bad arguments) comes back unchanged.
    Typical use: ``except RuntimeError as e: raise from_op_error(e) from e``.
    """
    tag = parse_tag(str(error)) if isinstance(error, RuntimeError) else None
    return error if tag is None else _exception(tag, None, None)


def translate(error: BaseException, sample: str | None, *, path: str | None = None) -> BaseException:
    """:func:`from_op_error`, with the message prefixed by ``sample`` (a path or ``"<bytes>"``) when given;
    ``path`` (the sample's path, if it has one) goes into ``DecodeError.path``."""
    tag = parse_tag(str(error)) if isinstance(error, RuntimeError) else None
    return error if tag is None else _exception(tag, sample, path)


def name_sample(error: BaseException, names: list) -> BaseException:
    """A batch call's ``error`` named by its sample: a :class:`DecodeError` with ``sample_index == i``
    becomes ``names[i]: <reason>`` with ``path = names[i]`` when ``names[i]`` is a path (not ``None``);
    other errors come back unchanged."""
    if not isinstance(error, DecodeError) or error.sample_index is None:
        return error
    index = error.sample_index
    if not 0 <= index < len(names) or names[index] is None:
        return error
    name = names[index]
    return DecodeError(f"{name}: {error.reason}", path=name, sample_index=index, reason=error.reason)
