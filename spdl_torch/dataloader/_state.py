"""The resumable state of a :class:`~spdl_torch.DataLoader`: one versioned dataclass, the RNG states captured at
the start of an epoch, and the :class:`Stateful` protocol a dataset implements to be saved with the loader."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import torch
from torch.utils.data import IterableDataset

__all__ = ["LoaderState", "Stateful", "capture_epoch_rngs", "restore_epoch_rngs"]

STATE_FORMAT = "spdl_torch.DataLoader/2"
_OLD_FORMATS = ("spdl_torch.DataLoader/1",)


@runtime_checkable
class Stateful(Protocol):
    """An object whose state the loader saves and restores: a map-style dataset with it is saved with the loader
    (the fused datasets: their per-sample seed); an ``IterableDataset`` with it is asked on each worker after
    each batch (with that worker's info set) and restored before the worker's ``iter()``."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...


@dataclasses.dataclass
class LoaderState:
    """Where an iteration stands. ``finished``: the epoch ``epoch`` is over (or none started), the next
    ``iter()`` starts epoch ``epoch + 1``; otherwise it continues epoch ``epoch`` after the batches yielded."""

    epoch: int = -1
    finished: bool = True
    # what the loader was built with: a state only resumes a loader that iterates the same batches
    batch_size: int | None = None
    dataset_len: int | None = None
    sampler_type: str | None = None
    # epoch start
    rng: dict[str, Any] | None = None  # RNG states at the start of the epoch (capture_epoch_rngs)
    generator_state: torch.Tensor | None = None  # finished: the loader's generator for the next epoch
    drew_base_seed: bool = True
    base_seed: int | None = None
    # progress
    num_yielded: int = 0
    prefix: int = 0  # batches [0, prefix) were all yielded
    yielded_seqs: list[int] = dataclasses.field(default_factory=list)  # yielded beyond the prefix (in_order=False)
    # iterable datasets
    iter_states: dict[int, Any] = dataclasses.field(default_factory=dict)
    exhausted: list[int] = dataclasses.field(default_factory=list)
    last_worker: int = -1
    # a Stateful map-style dataset
    dataset_state: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values and tensors, ``torch.save``-able."""
        return {"_format": STATE_FORMAT, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}

    @classmethod
    def from_dict(cls, state: Any) -> LoaderState:
        """Raises:
            ValueError: not a state of ``spdl_torch.DataLoader``."""
        fmt = state.get("_format") if isinstance(state, dict) else None
        if fmt != STATE_FORMAT and fmt not in _OLD_FORMATS:
            raise ValueError(f"state_dict: not a {STATE_FORMAT} state: {state!r:.200}")
        names = {f.name for f in dataclasses.fields(cls)}
        out = cls(**{k: v for k, v in state.items() if k in names})
        out.iter_states = {int(k): v for k, v in (out.iter_states or {}).items()}
        return out

    def check_compatible(self, described: LoaderState) -> None:
        """Raises ``ValueError`` when this state was saved by a loader that iterates other batches than the one
        ``described`` describes (another batch size, dataset length or sampler type): resuming would skip or
        repeat samples."""
        for name in ("batch_size", "dataset_len", "sampler_type"):
            saved, now = getattr(self, name), getattr(described, name)
            if saved is not None and now is not None and saved != now:
                raise ValueError(
                    f"load_state_dict: the state was saved by a DataLoader with {name}={saved!r}, this one has "
                    f"{name}={now!r}; resuming would skip or repeat samples")


_ORDER_SOURCE = {True: "a generator", False: "no generator (the order from torch's global RNG)"}


def check_epoch_rngs(state: LoaderState, loader: Any) -> None:
    """Raises ``ValueError`` when ``state`` stopped in the middle of an epoch whose order came from other random
    sources than ``loader`` draws its order from: a ``generator`` against none (torch's global RNG), or another
    number of sampler generators. The order would be drawn anew: samples repeated and others never loaded."""
    if state.finished or state.rng is None:
        return
    saved, now = state.rng["generator"] is not None, loader.generator is not None
    if saved != now:
        raise ValueError(f"load_state_dict: the state was saved in the middle of an epoch by a DataLoader with "
                         f"{_ORDER_SOURCE[saved]}, this one has {_ORDER_SOURCE[now]}; resuming would skip or "
                         f"repeat samples")
    saved_n, now_n = len(state.rng["samplers"]), len(sampler_generators(loader))
    if saved_n != now_n:
        raise ValueError(f"load_state_dict: the state was saved in the middle of an epoch by a DataLoader whose "
                         f"samplers had {saved_n} generator(s) of their own, this one's have {now_n}; resuming "
                         f"would skip or repeat samples")


def describe_loader(loader: Any) -> LoaderState:
    """The loader-identity fields of a state for ``loader``."""
    try:
        dataset_len = len(loader.dataset)
    except TypeError:
        dataset_len = None
    sampler = loader.batch_sampler if loader.batch_sampler is not None else loader.sampler
    inner = getattr(sampler, "sampler", None)
    kind = type(sampler).__qualname__ + (f"({type(inner).__qualname__})" if inner is not None else "")
    return LoaderState(batch_size=loader.batch_size, dataset_len=dataset_len, sampler_type=kind)


def sampler_generators(loader: Any) -> list[torch.Generator]:
    """Generators of the samplers other than the loader's ``generator`` (their state is saved)."""
    found: list[torch.Generator] = []
    for obj in (loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None)):
        g = getattr(obj, "generator", None)
        if isinstance(g, torch.Generator) and g is not loader.generator and all(g is not f for f in found):
            found.append(g)
    return found


def capture_epoch_rngs(loader: Any) -> dict[str, Any]:
    """The RNG states an epoch's order and base seed are drawn from: the loader's ``generator`` (or torch's
    global RNG without one) and the samplers' own generators."""
    return {
        "generator": loader.generator.get_state() if loader.generator is not None else None,
        "global": torch.get_rng_state() if loader.generator is None else None,
        "samplers": [g.get_state() for g in sampler_generators(loader)],
    }


def restore_epoch_rngs(loader: Any, rng: dict[str, Any]) -> torch.Tensor | None:
    """Restores :func:`capture_epoch_rngs`; returns the global RNG state it replaced (to be put back once the
    epoch's draws are made), or ``None``."""
    replaced = None
    if rng["generator"] is not None:
        loader.generator.set_state(rng["generator"])
    if rng["global"] is not None:
        replaced = torch.get_rng_state()
        torch.set_rng_state(rng["global"])
    for g, s in zip(sampler_generators(loader), rng["samplers"], strict=True):  # check_epoch_rngs: same count
        g.set_state(s)
    return replaced


def stateful_map_dataset(dataset: Any) -> bool:
    """A map-style dataset with ``state_dict()`` / ``load_state_dict()``, saved and restored with the loader."""
    return not isinstance(dataset, IterableDataset) and isinstance(dataset, Stateful)
