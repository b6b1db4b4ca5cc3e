"""The start of an epoch, whatever runs the workers (threads: ``_iterator.py``; torch's processes:
``_process.py``): the epoch number (the loader's count, a user's ``dataset.set_epoch`` since the last start, or
the resumed one), the generators' state the epoch starts from (captured, or restored from a saved state), the
base seed (drawn from the loader's ``generator`` as torch draws it, or the saved one), and ``set_epoch`` on the
loader's dataset (the workers' copies get it at their first fetch, or start with it as torch's processes do)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ._state import LoaderState, capture_epoch_rngs, restore_epoch_rngs

__all__ = ["EpochStart", "dataset_epoch", "start_epoch"]


def dataset_epoch(dataset: Any) -> int | None:
    """The epoch a dataset with ``set_epoch`` holds (its int ``epoch`` attribute), else None."""
    if not callable(getattr(dataset, "set_epoch", None)):
        return None
    epoch = getattr(dataset, "epoch", None)
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def _begin_epoch(loader: Any, resume: LoaderState | None, draw_base_seed: bool,
                persistent: bool) -> tuple[int, LoaderState | None, int | None, bool]:
    """The epoch an ``iter()`` starts (or continues), counted on ``loader``: ``(epoch, resume, forced_base_seed,
    draw_base_seed)``. ``resume`` comes back ``None`` when it held a finished epoch (the next one starts from its
    generator state); ``forced_base_seed`` is the saved ``base_seed`` to use instead of a drawn one, if any."""
    forced_base_seed = None
    if resume is not None and resume.finished:
        # the saved epoch was over: start the next one from the saved generator state
        if resume.generator_state is not None and loader.generator is not None:
            loader.generator.set_state(resume.generator_state)
        loader._epoch = resume.epoch
        if resume.base_seed is not None and persistent:
            forced_base_seed, draw_base_seed = resume.base_seed, False
        resume = None
    elif resume is not None:
        forced_base_seed, draw_base_seed = resume.base_seed, resume.drew_base_seed
    if resume is None:
        held = dataset_epoch(loader.dataset)
        if held is not None and held != loader._dataset_epoch_seen:
            loader._epoch = held - 1  # the user's dataset.set_epoch(held) since the last epoch start
    epoch = loader._epoch = loader._epoch + 1 if resume is None else resume.epoch
    return epoch, resume, forced_base_seed, draw_base_seed


@dataclasses.dataclass
class EpochStart:
    """What :func:`start_epoch` decided: ``epoch``; ``resume`` (``None``: a fresh epoch, also when the saved one
    was over); ``rng``, the generators' state the epoch started from (saved in ``state_dict()``);
    ``forced_base_seed``, the saved base seed to use; ``draw_base_seed``, whether this epoch draws one."""

    epoch: int
    resume: LoaderState | None
    rng: dict[str, Any]
    forced_base_seed: int | None
    draw_base_seed: bool
    _user_rng: torch.Tensor | None = None

    def base_seed(self, loader: Any, current: int | None) -> int | None:
        """The epoch's base seed, as torch draws it (``random_`` of an int64 from ``loader.generator``) when it
        draws one, the saved one when resumed, else ``current`` (persistent workers keep theirs)."""
        seed = current
        if self.draw_base_seed:
            seed = torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        return self.forced_base_seed if self.forced_base_seed is not None else seed

    def restore_user_rng(self) -> None:
        """Puts back the global RNG state the user had before a resumed epoch restored the saved one."""
        if self._user_rng is not None:
            torch.set_rng_state(self._user_rng)
            self._user_rng = None

    def set_dataset_epoch(self, loader: Any) -> None:
        """``loader.dataset.set_epoch(epoch)`` when it has one (its ``len()`` may depend on the epoch), and what it
        holds now, so that a user's own ``set_epoch`` before the next ``iter()`` is seen."""
        set_epoch = getattr(loader.dataset, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)
        loader._dataset_epoch_seen = dataset_epoch(loader.dataset)


def start_epoch(loader: Any, resume: LoaderState | None, draw_base_seed: bool, persistent: bool) -> EpochStart:
    """The epoch an ``iter()`` starts (or continues), counted on ``loader``, with the generators' state it starts
    from: captured now, or restored from ``resume`` (the user's global RNG state is then kept for
    :meth:`EpochStart.restore_user_rng`). ``draw_base_seed``: whether a fresh epoch draws a base seed (torch draws
    it once for persistent workers)."""
    epoch, resume, forced_base_seed, draw_base_seed = _begin_epoch(loader, resume, draw_base_seed, persistent)
    user = None
    if resume is None:
        rng = capture_epoch_rngs(loader)
    else:
        rng = resume.rng
        user = restore_epoch_rngs(loader, rng)
    return EpochStart(epoch, resume, rng, forced_base_seed, draw_base_seed, user)
