"""The ops of ``decode_images(augment=...)`` programs and its ``erase`` rows, as the library declares them
(``csrc/core/augment/op_table.h``, read here at import from ``torch.ops.spdl_torch.augment_op_table()``): each op's
code, its one name and its named arguments with their ranges. Rows are built by argument name (:func:`op_args`,
:func:`row`, :func:`erase_row`); what each row does: :func:`spdl_torch.io.decode_images`' docstring, "Augment and
erase rows", whose table :func:`rows_doc` writes from the same source."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Mapping, Sequence

import torch

from .. import _library  # noqa: F401  (registers torch.ops.spdl_torch.*)

__all__ = ["AUGMENT_COLUMNS", "ERASE", "ERASE_COLUMNS", "ERASE_OFF", "ERASE_RANDOM", "ERASE_VALUE", "NO_FILL", "OPS",
           "Arg", "Op", "code", "encode", "erase_row", "named_args", "op_args", "op_named", "row",
           "rows_doc"]


@dataclasses.dataclass(frozen=True)
class Arg:
    """One named argument of an op: ``count`` columns, each a ``kind`` (``"real"``, ``"integer"``, ``"choice"``)
    value; ``rule`` says which values the library accepts (``low`` / ``high``: ``None`` where unbounded);
    ``low_open`` / ``high_open``: that bound is excluded; ``choices``: a choice's names, its value the index; ``none``: the value standing for Python's ``None``;
    ``default``: the value of an argument left out (``None``: it must be given)."""

    name: str
    kind: str
    count: int
    low: float | None
    high: float | None
    low_open: bool
    high_open: bool
    choices: tuple[str, ...]
    none: float | None
    default: float | None
    doc: str
    rule: str

    def encode(self, op: str, value: object) -> tuple[float, ...]:
        """``value`` as this argument's columns: a number (or a choice's name, or ``None`` where the argument takes
        it), or ``count`` numbers."""
        values = list(value) if isinstance(value, (tuple, list)) else [value]
        if len(values) != self.count:
            raise TypeError(f"{op}: argument {self.name!r} takes {self.count} values, got {len(values)}")
        out = []
        for v in values:
            if v is None and self.none is not None:
                v = self.none
            elif isinstance(v, str):
                if v not in self.choices:
                    raise ValueError(f"{op}: argument {self.name!r} has no choice {v!r} (one of {list(self.choices)})")
                v = self.choices.index(v)
            out.append(float(v))
        return tuple(out)


@dataclasses.dataclass(frozen=True)
class Op:
    """One op of the augment rows: its ``code`` (a row's first column), ``name`` and ``args`` in column order."""

    code: int
    name: str
    doc: str
    args: tuple[Arg, ...]

    def arg(self, name: str) -> Arg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no argument {name!r}")


def _load() -> dict:
    return json.loads(torch.ops.spdl_torch.augment_op_table())


def _arg(d: dict) -> Arg:
    return Arg(d["name"], d["kind"], d["count"], d["low"], d["high"], d["low_open"], d["high_open"],
               tuple(d["choices"]), d["none"], d["default"], d["doc"], d["rule"])


_TABLE = _load()
#: The ops by name, in code order.
OPS: dict[str, Op] = {o["name"]: Op(o["code"], o["name"], o["doc"], tuple(_arg(a) for a in o["args"]))
                      for o in _TABLE["ops"]}
_BY_CODE = {op.code: op for op in OPS.values()}
#: The erase rows' arguments (their columns from the first).
ERASE = Op(-1, "erase", "", tuple(_arg(a) for a in _TABLE["erase"]))

AUGMENT_COLUMNS: int = _TABLE["columns"]  # the code, then the op's argument columns
ERASE_COLUMNS: int = _TABLE["erase_columns"]
NO_FILL: float = OPS["affine"].arg("fill").none  # affine's fill=None (torchvision's zero padding, no fill blend)
ERASE_OFF, ERASE_VALUE, ERASE_RANDOM = (ERASE.arg("mode").choices.index(m) for m in ("off", "value", "random"))


_MISSING = object()


def encode(op: Op, values: Mapping[str, object]) -> tuple[float, ...]:
    """The argument columns of ``op`` (an :data:`OPS` entry or :data:`ERASE`) from its arguments by name (as
    :func:`op_args`)."""
    out: list[float] = []
    given = 0
    for a in op.args:
        v = values.get(a.name, _MISSING)
        if v is _MISSING:
            if a.default is None:
                _check_known(op, values)
                raise TypeError(f"{op.name}: missing argument {a.name!r}")
            out += [float(a.default)] * a.count
            continue
        given += 1
        if a.count == 1 and type(v) in (float, int) and a.kind != "choice":  # the common case, as is
            out.append(float(v))
        else:
            out += a.encode(op.name, v)
    if given != len(values):
        _check_known(op, values)
    return tuple(out)


def _check_known(op: Op, values: Mapping[str, object]) -> None:
    unknown = sorted(set(values) - {a.name for a in op.args})
    if unknown:
        raise TypeError(f"{op.name}: unknown argument(s) {unknown} (it takes {[a.name for a in op.args]})")


def op_args(op: str, /, **values: object) -> tuple[float, ...]:
    """The argument columns of an ``op`` row (after the code) from its arguments by name; arguments with a
    default may be left out. Raises ``KeyError`` for an unknown op, ``TypeError`` for an unknown, missing or
    wrongly sized argument, ``ValueError`` for an unknown choice (the values' ranges are the library's check)."""
    return encode(OPS[op], values)


def row(op: str, /, **values: object) -> list[float]:
    """A whole augment row: ``[code, *op_args(op, **values)]`` padded to :data:`AUGMENT_COLUMNS`."""
    args = op_args(op, **values)
    return [float(OPS[op].code), *args, *([0.0] * (AUGMENT_COLUMNS - 1 - len(args)))]


def erase_row(**values: object) -> list[float]:
    """An erase row from its arguments by name (``mode``: ``"off"``, ``"value"`` or ``"random"``)."""
    args = encode(ERASE, values)
    return [*args, *([0.0] * (ERASE_COLUMNS - len(args)))]


def code(op: str) -> int:
    """The code of the op named ``op`` (``KeyError`` for a name the library does not have)."""
    return OPS[op].code


def op_named(code: int) -> Op:
    """The op of a row's code (``KeyError`` for a code the library does not have)."""
    return _BY_CODE[int(code)]


def named_args(op: Op, columns: Sequence[float]) -> dict[str, float | tuple[float, ...]]:
    """A row's argument columns (after the code) by argument name: a value, or a tuple of ``count`` values."""
    out: dict[str, float | tuple[float, ...]] = {}
    k = 0
    for a in op.args:
        vals = tuple(float(v) for v in columns[k:k + a.count])
        out[a.name] = vals[0] if a.count == 1 else vals
        k += a.count
    return out


def _columns(args: Sequence[Arg], prefix: str) -> str:
    """Each argument as a sentence: its columns, its name, its meaning and its rule."""
    parts, k = [], 0
    for a in args:
        where = f"{prefix}{k}" if a.count == 1 else f"{prefix}{k}..{prefix}{k + a.count - 1}"
        rule = a.rule if a.count == 1 else f"each {a.rule}"
        if a.default is not None and a.default != a.none:
            rule += f"; default {a.choices[int(a.default)] if a.choices else f'{a.default:g}'}"
        elif a.default is not None:
            rule += "; default None"
        parts.append(f"{where} ``{a.name}``: {a.doc} ({rule}).")
        k += a.count
    return " ".join(parts)


def rows_doc(width: int = 112) -> str:
    """The row table of :func:`spdl_torch.io.decode_images`' docstring (indented as it is there), written from
    the library's table: each op's name, code, what it does and its arguments (``aK``: column K + 1 of the row)."""
    name_w, code_w = max(len(n) for n in OPS) + 4, 4
    text_w = width - name_w - code_w - 4
    rule = f"{'=' * name_w}  {'=' * code_w}  {'=' * text_w}"
    lines = [rule, f"{'op':<{name_w}}  {'code':<{code_w}}  what it does; its arguments", rule]
    for op in OPS.values():
        text = op.doc + (" " + _columns(op.args, "a") if op.args else "")
        wrapped = textwrap.wrap(text, text_w, break_on_hyphens=False) or [""]
        lines.append(f"{'``' + op.name + '``':<{name_w}}  {op.code:<{code_w}}  {wrapped[0]}".rstrip())
        lines += [" " * (name_w + code_w + 4) + w for w in wrapped[1:]]
    lines.append(rule)
    lines += [""] + textwrap.wrap("An ``erase`` row (e0..e7): " + _columns(ERASE.args, "e"), width)
    return textwrap.indent("\n".join(lines), " " * 8).replace(" " * 8 + "\n", "\n")

