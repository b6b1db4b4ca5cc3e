"""Renamed keyword arguments: the old name keeps working for one release with a ``DeprecationWarning`` that
names the new one (``renamed_kwargs``), so every rename in the package says the same thing the same way."""

from __future__ import annotations

import functools
import warnings

__all__ = ["SpdlTorchDeprecationWarning", "deprecated", "renamed_kwargs", "warn_renamed"]


class SpdlTorchDeprecationWarning(DeprecationWarning):
    """A name or form of spdl_torch's API that goes away in the next release; the message names what replaces
    it. A ``DeprecationWarning``, so the usual filters apply (``-W error::DeprecationWarning``)."""


def deprecated(message: str, *, stacklevel: int = 3) -> None:
    """Warns ``message`` as a :class:`SpdlTorchDeprecationWarning` at the frame ``stacklevel`` up (3: the
    caller of the function that calls this)."""
    warnings.warn(message, SpdlTorchDeprecationWarning, stacklevel=stacklevel)


def warn_renamed(where: str, old: str, new: str, *, note: str = "", stacklevel: int = 4) -> None:
    """The warning for ``old=`` -> ``new=`` (4: the caller of a function decorated by :func:`renamed_kwargs`
    that calls this)."""
    deprecated(f"{where}: {old}= is deprecated, use {new}={note or ' (the same values)'}", stacklevel=stacklevel)


def renamed_kwargs(**renames: str):
    """A decorator: ``@renamed_kwargs(old="new", ...)`` maps each ``old=`` keyword of a call to ``new=`` with a
    ``DeprecationWarning`` naming ``new`` (pointing at the caller's line); passing both is a ``TypeError``.
    The wrapped function keeps its name, docstring and signature (``inspect.signature`` shows the new names)."""

    def wrap(fn):
        where = fn.__qualname__.replace(".__init__", "")

        @functools.wraps(fn)
        def call(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{where}: got both {new}= and its deprecated name {old}=; pass {new}= only")
                    warn_renamed(where, old, new, stacklevel=4)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        call.renamed_kwargs = dict(renames)
        return call

    return wrap
