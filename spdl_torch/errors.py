"""Exceptions raised by spdl_torch, and the conversion of a native op's error into one of them.

Errors of ``torch.ops.spdl_torch.*`` called directly (and of the :mod:`spdl_torch.deploy` modules) are
``RuntimeError`` exceptions whose message starts with a tag, ``[<Kind>( <key>=<value>)*] <reason>``;
:func:`from_op_error` turns one into the :class:`DecodeError`, :class:`OSError` or :class:`InternalError`
that the Python API (``spdl_torch.io``) raises for the same failure.
"""

from ._errors import DecodeError, InternalError, from_op_error

__all__ = ["DecodeError", "InternalError", "from_op_error"]
