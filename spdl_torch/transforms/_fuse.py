"""The matching rules of :func:`fuse`: torchvision v1 and v2 transforms onto ``decode_images`` arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torchvision.transforms as T1
from torchvision.transforms import v2

from ._augment_program import AugmentProgram
from ._classes import behaves_as, delegated, library_class, runs_as_written
from ._geometry import match_geometry
from ._plan import FusedPlan
from ._policies import ERASERS, apply_probability, draw_probability, match_augment, match_erasing
from ._timm import is_timm, translate
from ._timm_erasing import TimmErasing
from ._timm_policies import match_timm_policy

__all__ = ["OPS", "Analysis", "analyse", "fuse", "input_kind"]

_COMPOSES = (T1.Compose, v2.Compose)
_FLOATS = (torch.float32, torch.bfloat16)

# Deterministic transforms whose result on a batch Tensor[N, C, H, W] equals the stacked per-sample results
# (no random parameters: torchvision v2 draws ONE set of parameters per call, so random transforms on a
# batch would give every sample the same jitter; they stay per sample).
_BATCH_SAFE = (
    v2.Normalize, v2.ToDtype, v2.ConvertImageDtype, v2.ToPureTensor, v2.Grayscale, v2.RGB, v2.CenterCrop,
    v2.Pad, v2.Identity, T1.Normalize, T1.ConvertImageDtype, T1.Grayscale, T1.CenterCrop, T1.Pad,
)


def _flatten(t: Any, as_written: bool = True) -> list[Any]:
    """The transforms of a pipeline, nested ``Compose`` / ``nn.Sequential`` flattened. A container that runs
    code of its own (a subclass overriding ``forward`` / ``__call__``, see :mod:`._classes`) stays one opaque
    transform; with ``as_written=False`` (what a pipeline expects as input) every subclass is looked into. A
    plain wrapper that only calls a pipeline it holds (:func:`._classes.delegated`, e.g. torchvision's reference
    presets) is that pipeline."""
    inner = delegated(t)
    if inner is not None:
        return _flatten(inner, as_written)
    kind = behaves_as(t) if as_written else library_class(type(t))
    if kind in _COMPOSES or kind is torch.nn.Sequential:
        subs = t.transforms if kind in _COMPOSES else list(t)
        return [x for sub in subs for x in _flatten(sub, as_written)]
    return [t]


def _is_v1(t: Any) -> bool:
    kind = library_class(type(t))
    return kind is not None and kind.__module__ == "torchvision.transforms.transforms" and kind not in _COMPOSES


def input_kind(transform: Callable | None) -> str:
    """What our datasets feed ``transform``: ``"pil"`` (a ``PIL.Image`` in RGB mode, as torchvision's
    ImageFolder does) when it starts with a classic ``torchvision.transforms`` (v1) transform or contains
    v1's ``ToTensor`` / ``PILToTensor`` (which refuse tensors); ``"tensor"`` (a uint8 Tensor[3, H, W])
    otherwise (v2 transforms, v2 pipelines with v1 transforms that accept tensors, plain callables,
    ``None``). timm's transforms (PIL-based) count as v1."""
    if transform is None:
        return "tensor"
    ts = _flatten(transform, as_written=False)
    if not ts:  # an empty Compose: the identity
        return "tensor"
    kinds = [library_class(type(t)) for t in ts]
    pil = _is_v1(ts[0]) or any(k in (T1.ToTensor, T1.PILToTensor) or k is not None and k.__module__.startswith("timm.")
                               for k in kinds)
    return "pil" if pil else "tensor"


@dataclasses.dataclass
class Analysis:
    """What :func:`analyse` found: the plan (``None``: nothing fused), the first transform that is not
    fused with the reason, and the input the pipeline expects (``"pil"`` or ``"tensor"``)."""

    plan: FusedPlan | None
    unfused: Any
    reason: str
    input: str


_HFLIPS, _VFLIPS = (T1.RandomHorizontalFlip, v2.RandomHorizontalFlip), (T1.RandomVerticalFlip, v2.RandomVerticalFlip)
_FLIPS = _HFLIPS + _VFLIPS
_GRAYS = (T1.Grayscale, v2.Grayscale)
_NORMALIZES, _CONVERTS = (T1.Normalize, v2.Normalize), (T1.ConvertImageDtype, v2.ConvertImageDtype)
_TO_TENSOR_FLOAT = (T1.ToTensor, v2.ToTensor)
_TO_TENSOR_UINT8 = (T1.PILToTensor, v2.PILToTensor, v2.ToImage)
# v2 conversions that pass a plain uint8 tensor through unchanged (v2.PILToTensor converts PIL images only)
_V2_NOOPS = (v2.ToImage, v2.PILToTensor)


class _Colour:
    """The grey conversion found so far: Grayscale(n) (tensor rule or Pillow's), then v2.RGB."""

    def __init__(self) -> None:
        self.color, self.channels = "rgb", 3

    def take(self, t: Any, typ: type, pil: bool, dtype: torch.dtype, normalized: bool) -> tuple[bool, str]:
        """Whether ``t`` (Grayscale / RGB, of library class ``typ``) fuses here; else why not."""
        if typ is v2.RGB:  # grey -> 3 channels; RGB stays RGB
            if self.color != "rgb":
                self.channels = 3
            return True, ""
        if dtype != torch.uint8 or normalized:
            return False, "Grayscale of a float image (fused only before the conversion to float)"
        if self.color != "rgb":
            self.channels = int(t.num_output_channels)
            return True, ""
        self.color, self.channels = ("gray_pil" if pil else "gray"), int(t.num_output_channels)
        return True, ""

    def kwargs(self) -> dict[str, Any]:
        if self.color == "rgb":
            return {}
        kw: dict[str, Any] = {"color": self.color}
        if self.channels != 3:
            kw["num_output_channels"] = self.channels
        return kw


def analyse(transform: Callable | None, input: str | None = None) -> Analysis:
    """Matches the longest prefix of ``transform`` (torchvision v1 or v2; ``Compose`` and
    ``nn.Sequential`` flattened) onto ``decode_images`` arguments; see :mod:`spdl_torch.transforms`.

    ``input``: what the pipeline is given, ``"pil"`` (a ``PIL.Image``: v2 transforms then run Pillow's kernels,
    as torchvision's ``ImageFolder`` makes them do) or ``"tensor"``; ``None``: :func:`input_kind`'s guess.

    Raises:
        ValueError: ``input`` is not ``None``, ``"pil"`` or ``"tensor"``; an argument torchvision refuses.
    """
    if input not in (None, "pil", "tensor"):
        raise ValueError(f"input should be None, 'pil' or 'tensor', got {input!r}")
    kind = input_kind(transform) if input is None else input
    if transform is None:
        return Analysis(None, None, "", kind)
    orig = _flatten(transform)
    if not orig:
        return Analysis(None, transform, "an empty Compose", kind)
    ts = [translate(t)[0] or t for t in orig]  # timm's transforms as their torchvision equivalents
    pil = kind == "pil"
    k = 0
    dtype = torch.uint8
    colour = _Colour()
    # Leading conversions to a uint8 tensor (a no-op for the op, whose input is encoded bytes) and a
    # Grayscale before the geometry (grey of the resized pixels: the same up to rounding).
    while k < len(ts) and not runs_as_written(orig[k]):
        typ = behaves_as(ts[k])
        if typ in _TO_TENSOR_UINT8 and (pil or typ in _V2_NOOPS):
            pil = False
        elif not _noop(ts[k], typ, pil, torch.uint8) and (
                not (typ in _GRAYS or typ is v2.RGB) or not colour.take(ts[k], typ, pil, torch.uint8, False)[0]):
            break
        k += 1
    first = k
    geo, k, random, why = match_geometry(ts, k, pil)
    if not geo:
        if k < len(ts) and (runs_as_written(orig[k]) or is_timm(orig[k]) and translate(orig[k])[1]):
            why = runs_as_written(orig[k]) or translate(orig[k])[1]
        return Analysis(None, orig[k] if k < len(ts) else transform, why, kind)
    kw: dict[str, Any] = dict(geo)
    choices = getattr(ts[first], "interpolation_choices", None)  # timm's interpolation="random"
    if choices:
        kw["interpolation"], random = choices, True
    flips: dict[str, float] = {}
    normalized = False
    why = ""
    samplers: list[Any] = []
    eraser = None
    while k < len(ts):
        t, typ = ts[k], behaves_as(ts[k])
        why = runs_as_written(orig[k])
        if why:
            break
        if _noop(t, typ, pil, dtype):  # leaves the image as it is here: absorbed
            k += 1
            continue
        if eraser is not None:
            why = "after RandomErasing (fused as the last step: the rest runs after the op)"
            break
        flip = _flip(t)
        if flip is not None and flip[0] not in flips and not samplers:
            flips[flip[0]] = kw[flip[0]] = flip[1]
            random = random or flip[1] > 0
        elif typ in _GRAYS or typ is v2.RGB:
            fused, why = colour.take(t, typ, pil, dtype, normalized)
            if not fused:
                break
        elif pil and typ in _TO_TENSOR_FLOAT:  # PIL -> float32 in [0, 1]
            dtype, pil = torch.float32, False
        elif pil and typ in _TO_TENSOR_UINT8:  # PIL -> uint8 tensor
            pil = False
        elif not pil and (typ in _CONVERTS or typ is v2.ToDtype and isinstance(t.dtype, torch.dtype) and t.scale):
            new = t.dtype
            if dtype == torch.uint8 and new in _FLOATS or dtype == torch.float32 and new == torch.bfloat16:
                dtype = new
            else:
                why = f"a conversion from {dtype} to {new} does not map onto decode_images"
                break
        elif not pil and typ is v2.ToDtype and t.dtype == torch.bfloat16 and dtype == torch.float32:
            dtype = torch.bfloat16  # a float -> float cast: scale does not matter
        elif not pil and typ in _NORMALIZES and not normalized and dtype in _FLOATS \
                and (colour.channels == 3 or len(t.mean) == len(t.std) == 1):
            kw["mean"] = tuple(float(m) for m in t.mean)
            kw["std"] = tuple(float(s) for s in t.std)
            normalized = True
        elif typ in ERASERS or type(t) is TimmErasing:
            sampler, why = _erasing(t, pil, dtype, colour.channels)
            if sampler is None:
                break
            eraser, random = sampler, True
        else:
            match = match_timm_policy if is_timm(t) else match_augment  # both raise ValueError for bad arguments
            sampler, why = match(t, kw["height"], kw["width"], pil=pil)
            if sampler is not None:
                why = _augment_blocked(pil, dtype, normalized, colour)
            if sampler is None or why:
                why = why or _why_not(t, pil, dtype, flips, normalized, samplers)
                break
            samplers.append(sampler)
            random = True
        k += 1
    if dtype != torch.uint8:
        kw["dtype"] = dtype
    kw.update(colour.kwargs())
    rest_ts = orig[k:]
    augment = AugmentProgram(samplers, eraser, kw["height"], kw["width"]) if samplers or eraser else None
    plan = FusedPlan(op_kwargs=kw, fused=orig[:k], rest=_compose(transform, rest_ts) if rest_ts else None,
                     random=random, rest_input="pil" if pil else "tensor",
                     unfused=rest_ts[0] if rest_ts else None, unfused_reason=why, augment=augment)
    if rest_ts:
        _split_rest(plan, transform, rest_ts, pil)
    return Analysis(plan, plan.unfused, why, kind)


def _flip(t: Any) -> tuple[str, float] | None:
    """A flip (``RandomHorizontalFlip(p)``, ``RandomVerticalFlip(p)``, or one of them in ``RandomApply(p')``:
    probability p * p') as (op argument, probability); None for anything else."""
    p = 1.0
    typ = behaves_as(t)
    if typ in (T1.RandomApply, v2.RandomApply):
        if len(t.transforms) != 1:
            return None
        p, t = apply_probability(t), t.transforms[0]
        typ = behaves_as(t)
    if typ in _HFLIPS:
        return "hflip_prob", p * draw_probability(t)
    if typ in _VFLIPS:
        return "vflip_prob", p * draw_probability(t)
    return None


def _noop(t: Any, typ: type | None, pil: bool, dtype: torch.dtype) -> bool:
    """Whether ``t`` (of library class ``typ``) leaves the image as it is at this point of the pipeline: a
    ``PIL.Image`` (``pil``) or a plain tensor of ``dtype``, as torchvision runs it. ``Identity``; v1's
    ``RandomApply([])``; on a PIL image v2's ``ToDtype`` / ``ConvertImageDtype`` / ``ToPureTensor`` (they pass
    PIL images through); on a tensor ``ToImage`` / ``ToPureTensor`` / v2's ``PILToTensor`` (the fused output
    stays a plain tensor) and ``ToDtype`` / ``ConvertImageDtype`` to its own dtype (``scale`` either way)."""
    if typ in (v2.Identity, torch.nn.Identity) or typ is T1.RandomApply and not list(t.transforms):
        return True
    if pil:
        return typ in (v2.ToDtype, v2.ConvertImageDtype, v2.ToPureTensor)
    if typ in (v2.ToImage, v2.ToPureTensor, v2.PILToTensor):
        return True
    return (typ in _CONVERTS or typ is v2.ToDtype) and isinstance(t.dtype, torch.dtype) and t.dtype == dtype


def _augment_blocked(pil: bool, dtype: torch.dtype, normalized: bool, colour: _Colour) -> str:
    """Why a recognised augmentation cannot fuse here ("" when it can)."""
    if dtype != torch.uint8 or normalized:
        return "an augmentation of a float image (fused only on the uint8 crop, before the conversion to float)"
    if colour.color != "rgb":
        return "an augmentation after Grayscale (fused augmentations run on the RGB crop)"
    return ""


def _erasing(t: Any, pil: bool, dtype: torch.dtype, channels: int) -> tuple[Any, str]:
    """The erasing sampler of ``RandomErasing`` on the float slot, or (None, why not)."""
    # raises ValueError for bad arguments
    sampler, why = t.sampler(channels) if isinstance(t, TimmErasing) else match_erasing(t, channels)
    if pil or dtype not in _FLOATS:
        return None, "RandomErasing before the conversion to float (fused only on the float slot)"
    return sampler, why


def _why_not(t: Any, pil: bool, dtype: torch.dtype, flips: dict[str, float], normalized: bool,
             samplers: list[Any] | None = None) -> str:
    typ = behaves_as(t)
    if is_timm(t):
        return translate(t)[1]
    flip = _flip(t)
    if flip is not None and samplers and flip[0] not in flips:
        return "a flip after an augmentation (fused flips run before the augmentations)"
    if flip is not None:
        return f"a second {'horizontal' if flip[0] == 'hflip_prob' else 'vertical'} flip"
    if typ in (T1.RandomChoice, v2.RandomChoice):
        return "RandomChoice: decode_images draws no per-sample choice between transforms"
    if typ in (T1.RandomApply, v2.RandomApply):
        return "RandomApply of anything but one flip or fusable augmentations"
    if typ in _NORMALIZES:
        if normalized:
            return "a second Normalize"
        if not pil and dtype in _FLOATS:
            return "Normalize with 3 values of a 1-channel (Grayscale) image"
        return "Normalize before a conversion to float" if not pil else "Normalize of a PIL image"
    if typ is v2.ToDtype:
        return "ToDtype without scale=True to another dtype (or with a dict of dtypes)"
    if typ in _TO_TENSOR_FLOAT:
        return "ToTensor of a tensor"
    return "no decode_images equivalent"


def _compose(like: Any, ts: list[Any]) -> Callable:
    while delegated(like) is not None:
        like = delegated(like)
    return T1.Compose(ts) if library_class(type(like)) is T1.Compose else v2.Compose(ts)


def _split_rest(plan: FusedPlan, like: Any, ts: list[Any], pil: bool) -> None:
    """Splits the remainder into a batched head of deterministic transforms and the per-sample rest.

    Deterministic transforms after the first random one stay per sample: stacking the per-sample results
    to run them once per batch measured 5-12 % slower on 32 x 3 x 224 x 224 float batches
    (``benchmarks/bench_remainder.py``; per-sample rows stay in cache, a batch does not)."""
    head = 0
    if not pil:
        while head < len(ts) and behaves_as(ts[head]) in _BATCH_SAFE:
            head += 1
    plan.batched = _compose(like, ts[:head]) if head else None
    plan.per_sample = _compose(like, ts[head:]) if head < len(ts) else None


# The plan's arguments decode_video_clips takes (only non-default ones appear in a plan), and the values of those it
# takes only some of. A transform that maps onto anything else (RandomCrop, vertical flips, Grayscale, max_size,
# nearest, augmentations) runs per clip after the fused part instead of being dropped.
_CLIP_KWARGS = {"geometry", "height", "width", "resize_shorter", "scale", "ratio", "hflip_prob", "interpolation", "dtype",
                "mean", "std"}
_CLIP_VALUES = {"geometry": ("eval", "resize", "train"), "interpolation": ("bilinear", "bicubic")}
OPS = ("decode_images", "decode_video_clips")


def _clip_runnable(plan: FusedPlan) -> bool:
    kw = plan.op_kwargs
    return plan.augment is None and set(kw) <= _CLIP_KWARGS and all(kw[k] in v for k, v in _CLIP_VALUES.items() if k in kw)


def _clip_plan(transform: Callable, plan: FusedPlan | None) -> FusedPlan | None:
    """The plan of the longest prefix of ``transform`` that decode_video_clips can run, the rest of the transform
    its per-clip remainder; ``None`` when no prefix maps."""
    if plan is None or _clip_runnable(plan):
        return None if plan is None else dataclasses.replace(plan, op="decode_video_clips")
    ts = _flatten(transform)
    for k in range(len(plan.fused) - 1, 0, -1):
        head = analyse(_compose(transform, ts[:k])).plan
        if head is not None and head.rest is None and _clip_runnable(head):
            rest = _compose(transform, ts[k:])
            return dataclasses.replace(head, rest=rest, batched=None, per_sample=rest, unfused=ts[k], op="decode_video_clips",
                                       unfused_reason="decode_video_clips does not take this transform's arguments")
    return None


def fuse(transform: Callable | None, *, op: str = "decode_images", input: str | None = None) -> FusedPlan | None:
    """Maps the longest fusable prefix of a torchvision pipeline onto ``op`` (see :mod:`spdl_torch.transforms`);
    ``None`` when no prefix yields a fixed output size (nothing fused).

    Args:
        transform: a torchvision v2 or v1 transform, ``Compose`` or ``nn.Sequential`` (or ``None``).
        op: ``"decode_images"`` (the default: a transform of an image) or ``"decode_video_clips"`` (a v2 transform
            of a clip, uint8 Tensor[T, 3, H, W]: the prefix that op takes, one draw per clip; the rest of the
            transform runs per clip).
        input: what the pipeline is given: ``None`` (the default: a PIL image for a pipeline that starts with a
            classic ``torchvision.transforms`` class that needs one, else a uint8 tensor), ``"pil"`` (a
            ``PIL.Image`` whatever the classes: what torchvision's ``ImageFolder`` and the Hugging Face ``Image``
            feature give a pipeline, whose v2 transforms then run Pillow's kernels) or ``"tensor"``.

    Raises:
        ValueError: an unknown ``op`` or ``input`` (or ``input="pil"`` with ``op="decode_video_clips"``, whose
            clips are tensors); arguments torchvision refuses (naming the transform and the argument).
    """
    if op not in OPS:
        raise ValueError(f"fuse: expected op {' or '.join(map(repr, OPS))}, got {op=}")
    if op == "decode_video_clips" and input == "pil":
        raise ValueError("fuse: op='decode_video_clips' transforms clips (tensors), not PIL images; got input='pil'")
    plan = analyse(transform, input).plan
    return _clip_plan(transform, plan) if op == "decode_video_clips" else plan
