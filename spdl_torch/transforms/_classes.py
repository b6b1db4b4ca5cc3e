"""Which library class a transform object runs as: the fuser replaces torchvision's (and timm's, and torch's
``nn.Sequential`` / ``nn.Identity``) code by the op, so it accepts an object only when the code that object
runs is that class's own.

The decision is by identity, never by ``isinstance``: an object of a user's subclass runs as its library
class (:func:`behaves_as`) only when no attribute that class has is replaced, in the subclass or on the
object (``type(t).forward is v2.Compose.forward``, ``type(t).__call__ is T1.Compose.__call__``, ...), and the
object has no forward hooks. A subclass may still define its constructor (the fuser reads the attributes
torchvision's own methods read), its printed form (``__repr__``, ``__str__``, ``extra_repr``) and names the
library class does not have (torchvision never calls them). Anything else (``forward``, ``__call__``,
``transform``, ``make_params``, ``_sample_dirichlet``, a class table such as ``_AUGMENTATION_SPACE``, ...) makes
the object run as written: :func:`runs_as_written` says why.

A plain wrapper (no library base) whose class defines only its constructor, its printed form and a
``__call__`` whose code is exactly ``return self.<name>(image)`` (torchvision's reference presets,
``ClassificationPresetTrain`` / ``ClassificationPresetEval``, are such wrappers around a ``Compose``) runs what
it holds: :func:`delegated` returns that object, so the fuser reads the pipeline inside.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch
from torchvision.transforms import v2

__all__ = ["behaves_as", "delegated", "library_class", "runs_as_written"]

_LIBRARIES = ("torchvision", "timm", "torch")

# What a subclass may define without changing the code an object runs: its constructor, its printed form and
# Python's own bookkeeping of a class.
_SAFE = frozenset({
    "__init__", "__repr__", "__str__", "extra_repr", "__module__", "__qualname__", "__doc__", "__dict__",
    "__weakref__", "__annotations__", "__annotate__", "__firstlineno__", "__static_attributes__", "__classcell__",
    "__orig_bases__", "__parameters__", "__slotnames__", "_abc_impl",
})

_MISSING = object()
# Bases of the user's own transforms: a subclass of these is a transform of its own, not a changed library one.
_GENERIC = (torch.nn.Module, v2.Transform)


def library_class(cls: type) -> type | None:
    """The nearest class of ``cls``'s MRO (``cls`` itself included) defined by torchvision, timm or torch;
    ``None`` for none (a plain callable)."""
    for c in cls.__mro__:
        if str(getattr(c, "__module__", "")).split(".")[0] in _LIBRARIES:
            return c
    return None


def _unwrap(attr: Any) -> Any:
    """The function of a ``staticmethod`` / ``classmethod`` (v2's ``Transform.__init_subclass__`` wraps v1's
    ``get_params`` anew in every subclass: the same function), else ``attr``."""
    return attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr


def _replaced(t: Any, base: type) -> list[str]:
    """What of ``base`` the object ``t`` does not run as ``base`` defines it: attribute names (sorted), and
    ``"forward hooks"`` when it has some."""
    cls = type(t)
    names = set()
    own = [c for c in cls.__mro__ if c not in base.__mro__]
    for c in own:
        for name in vars(c):
            if name in _SAFE:
                continue
            theirs = inspect.getattr_static(base, name, _MISSING)
            if theirs is not _MISSING and _unwrap(inspect.getattr_static(cls, name)) is not _unwrap(theirs):
                names.add(name)
    for name, value in getattr(t, "__dict__", {}).items():  # a method replaced on the object itself
        theirs = inspect.getattr_static(base, name, _MISSING)
        if name not in _SAFE and callable(theirs) and value is not theirs and callable(value):
            names.add(name)
    out = sorted(names)
    if getattr(t, "_forward_hooks", None) or getattr(t, "_forward_pre_hooks", None):
        out.append("forward hooks")
    return out


def behaves_as(t: Any) -> type | None:
    """The library class whose code ``t`` runs (``type(t)`` itself, or the nearest library class of a subclass
    that replaces nothing of it), or ``None``: a plain callable, or an object that runs code of its own."""
    base = library_class(type(t))
    if base is None or _replaced(t, base):
        return None
    return base


def runs_as_written(t: Any) -> str:
    """Why the fuser leaves ``t`` as written: e.g. ``"MyCompose overrides forward: runs as written"``, for an
    object of a library class (or a subclass of one) that replaces some of its code; ``""`` otherwise (a
    library object the fuser may match, or a plain callable, or a direct subclass of a generic base such as
    ``nn.Module`` or ``v2.Transform``: a transform of the user's own)."""
    base = library_class(type(t))
    if base is None or base in _GENERIC and base is not type(t):
        return ""
    replaced = _replaced(t, base)
    if not replaced:
        return ""
    hooks = replaced[-1] == "forward hooks"
    names = [n for n in replaced if n != "forward hooks"]
    what = " and ".join(filter(None, [f"overrides {', '.join(names)}" if names else "", "has forward hooks" if hooks else ""]))
    return f"{type(t).__name__} {what}: runs as written"


# a __call__ that takes *args / **kwargs, or is a generator or coroutine, is not a plain call
_NOT_PLAIN = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE
              | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE)


def _delegating_call(self, image):  # the code a delegating wrapper's __call__ must have (any attribute name)
    return self.transforms(image)


def delegated(t: Any) -> Any | None:
    """The object a plain wrapper ``t`` calls, or ``None``.

    ``t`` qualifies when its class has no base but ``object``, defines nothing but ``__call__`` and what
    :data:`_SAFE` allows, that ``__call__`` is a plain function of two positional arguments whose bytecode is
    that of ``return self.<name>(image)``, and ``<name>`` is an attribute of the object itself (not of its
    class, not a property): calling ``t(image)`` then runs ``t.<name>(image)`` and nothing else."""
    cls = type(t)
    if cls.__mro__[1:] != (object,) or library_class(cls) is not None:
        return None
    if any(name not in _SAFE and name != "__call__" for name in vars(cls)):
        return None
    call = vars(cls).get("__call__")
    if not isinstance(call, types.FunctionType) or call.__closure__ or call.__defaults__ or call.__kwdefaults__:
        return None
    code, model = call.__code__, _delegating_call.__code__
    if (code.co_code != model.co_code or code.co_argcount != 2 or code.co_kwonlyargcount or code.co_posonlyargcount
            or code.co_flags & _NOT_PLAIN or len(code.co_names) != 1):
        return None
    inner = getattr(t, "__dict__", {}).get(code.co_names[0], _MISSING)
    return None if inner is _MISSING or not callable(inner) else inner
