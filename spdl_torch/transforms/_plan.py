"""``FusedPlan``: the op arguments of a fused prefix and how the unfused remainder runs after it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .._pil import to_pil
from .._seeds import sample_seeds as _sample_seeds

__all__ = ["FusedPlan"]

# The batched head runs on chunks of this many samples, written into one output batch: the chunk's
# intermediates stay in cache (32 x 3 x 224 x 224 float32 is 18 MiB). ToDtype + Normalize alone on decoded
# batches of 32, on 2 loaded cores: median 20.6 ms per batch against 36.7 ms for the whole batch at once and
# 33.3 ms per sample + stack (benchmarks/bench_remainder.py; benchmarks/results/2026-12-01-remainder.md).
HEAD_CHUNK = 4


def run_head(head: Callable, batch: torch.Tensor, chunk: int = HEAD_CHUNK) -> torch.Tensor:
    """``head(batch)`` computed ``chunk`` samples at a time into one Tensor[N, ...] (the same values: the
    head holds deterministic transforms that treat every sample alike)."""
    n = batch.shape[0]
    if n <= chunk:
        return head(batch)
    first = head(batch[:chunk])
    out = torch.empty((n, *first.shape[1:]), dtype=first.dtype)
    out[:chunk] = first
    for i in range(chunk, n, chunk):
        out[i:i + chunk] = head(batch[i:i + chunk])
    return out


@dataclasses.dataclass
class FusedPlan:
    """The op arguments of a fused prefix, plus the transforms left to run after it.

    Attributes:
        op_kwargs: keyword arguments of :func:`spdl_torch.io.decode_images` (height, width, geometry, ...), only
            those that differ from its defaults.
        fused: the torchvision transforms the op replaces, in order.
        rest: the remaining transforms (a ``Compose``), or ``None`` when everything was fused.
        random: whether the fused part draws random numbers (needs seeds).
        batched: the deterministic head of ``rest`` that runs on the batch Tensor[N, C, H, W]
            (e.g. ``Normalize``, ``ToDtype``) in chunks of ``HEAD_CHUNK`` samples: the same values as per
            sample, the result one batch tensor.
        per_sample: the part of ``rest`` that runs on each sample (random transforms draw their own
            parameters per sample, as in torchvision), or ``None``.
        rest_input: ``"tensor"`` (``per_sample`` gets uint8/float Tensor[C, H, W] rows of the batch) or
            ``"pil"`` (a classic ``torchvision.transforms`` pipeline whose image is still a PIL image at
            that point: ``per_sample`` gets ``PIL.Image`` RGB images, as from torchvision's ImageFolder).
        unfused: the first transform that is not fused (``None`` when everything was) and
            ``unfused_reason``, why not.
        augment: the fused random augmentations (an ``AugmentProgram``: torchvision's policies, colour
            jitter, affine, blur, ..., and a final ``RandomErasing``), or ``None``; each sample's ops are
            drawn from its seed (:meth:`sample_augmentation`) and passed to the op as ``augment`` /
            ``erase`` rows.
        op: the op the plan's arguments are for: ``"decode_images"``, or ``"decode_video_clips"`` (a plan of
            ``fuse(transform, op="decode_video_clips")``, one draw per clip).
    """

    op_kwargs: dict[str, Any]
    fused: list[Any]
    rest: Callable | None
    random: bool
    batched: Callable | None = None
    per_sample: Callable | None = None
    rest_input: str = "tensor"
    unfused: Any = None
    unfused_reason: str = ""
    augment: Any = None
    op: str = "decode_images"

    def __post_init__(self) -> None:
        if self.rest is not None and self.batched is None and self.per_sample is None:
            self.per_sample = self.rest

    def __call__(
        self,
        srcs: Sequence[Any],
        seeds: torch.Tensor | None = None,
        *,
        strict: bool = True,
        pin_memory: bool = False,
        max_pixels: int | None = None,
    ) -> Any:
        """Decodes ``srcs`` with the fused op and runs the remainder.

        Returns the batch Tensor[N, C, H, W] when nothing runs per sample, else the list of per-sample
        results. With ``strict=False``: ``(result, ok)``, ``ok`` a bool Tensor[N] (bad slots zero-filled
        before the remainder). ``max_pixels`` goes to :func:`~spdl_torch.io.decode_images`.

        Raises:
            spdl_torch.DecodeError, OSError, TypeError, ValueError: as :func:`~spdl_torch.io.decode_images`;
                whatever the unfused transforms raise.
        """
        from ..io import decode_images

        if seeds is None and self.random:
            seeds = torch.randint(-(2**63), 2**63 - 1, (len(srcs),), dtype=torch.int64)
        kwargs = dict(self.op_kwargs)
        if self.rest_input == "pil":
            kwargs["dimension_order"] = "NHWC"  # the rows PIL images are made from, without a copy
        if self.augment is not None:
            kwargs.update({k: v for k, v in self.augment.build(seeds).items() if v is not None})
        if isinstance(kwargs.get("interpolation"), tuple):  # a filter drawn per sample (timm's "random")
            result = _decode_per_filter(decode_images, list(srcs), seeds, kwargs, strict=strict, max_pixels=max_pixels)
        else:
            result = decode_images(srcs, seeds=seeds, strict=strict, pin_memory=pin_memory, max_pixels=max_pixels,
                                   **kwargs)
        batch, ok = result.data, result.ok
        if self.rest_input == "pil":
            batch = batch.permute(0, 3, 1, 2)
        if self.batched is not None:
            batch = run_head(self.batched, batch)
        if self.per_sample is not None:
            samples = [to_pil(img) for img in batch] if self.rest_input == "pil" else list(batch)
            batch = [self.per_sample(img) for img in samples]
        return batch if strict else (batch, ok)

    @staticmethod
    def sample_seeds(base_seed: int, epoch: int, indices: Sequence[int]) -> torch.Tensor:
        """The per-sample seeds the fused ``decode_images`` call draws from, one per index:
        ``splitmix64(splitmix64(splitmix64(base_seed) ^ epoch) ^ index)`` as int64 Tensor[N] (the 64 bits
        reinterpreted as signed). A sample's seed depends only on ``(base_seed, epoch, index)``, never on
        threads, batches or completion order; the datasets draw sample ``i``'s as
        ``FusedPlan.sample_seeds(seed, epoch, [i])``."""
        return _sample_seeds(base_seed, epoch, indices)

    def sample_augmentation(self, seed: int) -> list:
        """The augmentation ops the sample with this ``seed`` gets (``[]`` when none is fused), in order.

        Returns:
            A list of frozen op records, each with the fields ``op`` (the row's op name in the library's table:
            ``"affine"``, ``"adjust_brightness"``, ..., ``"identity"``, ``"erase"``), ``args`` (its argument
            columns, a tuple of floats; the property ``arguments`` gives them by name, a tuple for an argument of
            several columns such as ``translate``), ``transform`` (the name of the transform that drew it),
            ``name`` / ``magnitude`` (the policy's op name and value: for torchvision's policies the signed
            magnitude as torchvision draws it, e.g. ``"ShearX"``, -0.3; for timm's the op's argument after timm's
            level rule; ``None`` where there is none). The erasing, if drawn, comes last (``op="erase"``,
            ``arguments``: ``mode``, ``top``, ``left``, ``height``, ``width``, ``value``). AugMix's rows:
            ``mix_begin`` (the original image's weight), each chain's ops and a ``mix_add`` (the chain's weight),
            then ``mix_end``.
        """
        return [] if self.augment is None else self.augment.sample(int(seed))

    @property
    def native(self) -> bool:
        """Whether the plan leaves no per-sample Python work: everything fused, or only a deterministic
        remainder run once on the batch tensor (a :class:`spdl_torch.DataLoader` loads such a dataset on
        threads)."""
        return self.per_sample is None

    def sample_geometry(self, seed: int, image_height: int, image_width: int):
        """The crop box and flips the op draws for the sample with this ``seed`` (its own seed:
        ``FusedPlan.sample_seeds(seed, epoch, [index])``, as the datasets draw it) whose EXIF-oriented image is
        ``image_height x image_width`` pixels, e.g. to crop a sample's boxes or masks as its image was cropped.

        Returns:
            A frozen record with the fields ``top``, ``left``, ``height``, ``width`` (ints: for
            ``geometry="train"`` the ``RandomResizedCrop`` box in source pixels of the EXIF-oriented image; for
            ``"random_crop"`` the ``RandomCrop`` box in the resized and padded image, torchvision's
            ``RandomCrop.make_params`` coordinates; for ``"eval"`` / ``"resize"`` the whole source image) and
            ``hflip``, ``vflip`` (bools: whether the sample is flipped horizontally / vertically).

        Raises:
            ValueError: ``geometry="random_crop"`` and a crop larger than the padded resized image.
        """
        from ._sample_geometry import sample_geometry

        kw = self.op_kwargs
        names = ("resize_shorter", "max_size", "scale", "ratio", "padding", "pad_if_needed", "hflip_prob", "vflip_prob")
        return sample_geometry(seed, image_height, image_width, out_size=(kw["height"], kw["width"]),
                               geometry=kw.get("geometry", "eval"), **{k: kw[k] for k in names if k in kw})

    def describe(self) -> str:
        """Lines saying what runs where: the op call and the transforms it replaces, then the remainder, then why
        its first transform is not fused (``unfused_reason``)."""
        args = ", ".join(f"{k}={_short(v)}" for k, v in self.op_kwargs.items())
        lines = [f"fused into {self.op}({args}): {_names(self.fused)}"]
        if self.augment is not None:
            lines.append(f"with per-sample augment programs (up to {self.augment.max_rows} ops): "
                         f"{', '.join(self.augment.names())}")
        if self.batched is not None:
            lines.append(f"then once per batch: {_names(_parts(self.batched))}")
        if self.per_sample is not None:
            kind = "PIL images" if self.rest_input == "pil" else "tensors"
            lines.append(f"then per sample in Python (on {kind}): {_names(_parts(self.per_sample))}")
        if self.unfused is not None and self.unfused_reason:
            lines.append(f"not fused from {type(self.unfused).__name__} on: {self.unfused_reason}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        body = self.describe().replace("\n", "\n    ")
        return f"FusedPlan(\n    {body}\n)"


def _decode_per_filter(decode_images: Callable, srcs: list, seeds: torch.Tensor, kwargs: dict[str, Any], *,
                       strict: bool, max_pixels: int | None) -> Any:
    """``decode_images`` with ``kwargs["interpolation"]`` a tuple of filters, one drawn per sample from its seed
    (:func:`interpolation_choice`): one call per filter on its samples, scattered into one ``ImageBatch``; a bad
    sample's ``DecodeError`` names its index in ``srcs``."""
    from .._errors import DecodeError
    from ..io import ImageBatch
    from ._augment_program import interpolation_choice

    choices = kwargs.pop("interpolation")
    picks = [interpolation_choice(s, len(choices)) for s in seeds.tolist()]
    n = len(srcs)
    batch, ok = None, torch.ones(n, dtype=torch.bool)
    for c, name in enumerate(choices):
        idx = [i for i, p in enumerate(picks) if p == c]
        if not idx:
            continue
        sub = {k: (v[idx] if k in ("augment", "erase") else v) for k, v in kwargs.items()}
        try:
            result = decode_images([srcs[i] for i in idx], seeds=seeds[idx], strict=strict, max_pixels=max_pixels,
                                   interpolation=name, **sub)
        except DecodeError as e:
            if e.sample_index is None:
                raise
            i = idx[e.sample_index]
            where = e.path if e.path is not None else f"sample {i}"
            raise DecodeError(f"{where}: {e.reason}", path=e.path, sample_index=i, reason=e.reason) from None
        part, part_ok = result.data, result.ok
        if batch is None:
            batch = torch.empty((n, *part.shape[1:]), dtype=part.dtype)
        batch[idx] = part
        ok[idx] = part_ok
    return ImageBatch(batch, ok)


def _parts(t: Any) -> list[Any]:
    return list(getattr(t, "transforms", [t]))


def _short(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(f"{x:.4g}" if isinstance(x, float) else repr(x) for x in v) + ")"
    return repr(v)


def _names(ts: Sequence[Any]) -> str:
    return "[" + ", ".join(" ".join(repr(t).split()) for t in ts) + "]"
