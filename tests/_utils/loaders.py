"""The two loaders side by side: every behavioural test of the DataLoader runs against both,
``torch.utils.data.DataLoader`` (the reference that proves the test right) and ``spdl_torch.DataLoader``.

``both(ours=..., torch_skip=...)`` parametrizes a test's ``DL`` argument over the two loaders. ``ours`` is the
reason of a ``pytest.mark.xfail(strict=True)`` on the spdl_torch variant while the code fails it; when the fix
lands the variant XPASSes, and the marker is removed.
"""

from __future__ import annotations

import threading
import time

import pytest
import torch
import torch.utils.data as tud

import spdl_torch

TORCH = tud.DataLoader
OURS = spdl_torch.DataLoader


class ThreadLoader(spdl_torch.DataLoader):
    """``spdl_torch.DataLoader`` on worker threads (``worker_mode="thread"`` unless given): for tests about
    thread workers over plain Python datasets, which ``worker_mode="auto"`` loads in torch's processes."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("worker_mode", "thread")
        super().__init__(*args, **kwargs)

# Threads a DataLoader of ours starts carry this prefix (spdl_torch.dataloader._THREAD_NAME).
OUR_THREAD_PREFIX = "spdl_torch-DataLoader-worker"


def both(ours: str | None = None, torch_skip: str | None = None, ours_only: bool = False, threads: bool = False,
         torch_slow: bool = False):
    """``pytest.mark.parametrize("DL", [torch's DataLoader, ours])``.

    Args:
        ours: if given, the spdl_torch variant is ``xfail(strict=True, reason=ours)``.
        torch_skip: if given, the torch variant is skipped with this reason (a case inherently about threads or
            about our extensions).
        ours_only: same as ``torch_skip`` with a generic reason.
        threads: ours is :class:`ThreadLoader` (a case about thread workers), else ``spdl_torch.DataLoader`` as
            a user gets it (``worker_mode="auto"``).
        torch_slow: the torch variant (the reference the case was written against) is marked ``slow``: its
            worker processes cost seconds; ours stays in the fast tier.
    """
    if ours_only and torch_skip is None:
        torch_skip = "spdl_torch only: about threads or an spdl_torch extension"
    torch_marks = [pytest.mark.skip(reason=torch_skip)] if torch_skip else []
    torch_marks += [pytest.mark.slow] if torch_slow else []
    our_marks = [pytest.mark.xfail(strict=True, reason=ours)] if ours else []
    return pytest.mark.parametrize("DL", [
        pytest.param(TORCH, id="torch", marks=torch_marks),
        pytest.param(ThreadLoader if threads else OURS, id="spdl", marks=our_marks),
    ])


def worker_id() -> int | None:
    """``torch.utils.data.get_worker_info().id`` or None: what code written for torch reads."""
    info = tud.get_worker_info()
    return None if info is None else info.id


def our_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(OUR_THREAD_PREFIX)]


def ints(batches) -> list[int]:
    """All values of a list of batches (tensors, ints or lists of them), flattened, in order."""
    out: list[int] = []
    for b in batches:
        out.extend(int(x) for x in torch.as_tensor(b).reshape(-1).tolist())
    return out


class Counting(tud.Dataset):
    """``ds[i] == i`` for ``i < n``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


def collect(loader) -> list:
    """``list(loader)``; if that raises, the loader's threads are given up to 5 s to end before the exception
    leaves. Where a test fails (or xfails) because a worker thread raised, pytest formats the failure while the
    other worker threads may still format their own exceptions, and Python 3.11's traceback formatting races
    (``SystemError: AST constructor recursion depth mismatch`` in pytest's own reporting, an INTERNALERROR that
    ends the test run)."""
    before = {t.ident for t in our_threads()}
    it = iter(loader)
    try:
        return list(it)
    except BaseException:
        it = None  # drop the iterator: its threads stop
        deadline = time.monotonic() + 5.0
        while {t.ident for t in our_threads()} - before and time.monotonic() < deadline:
            time.sleep(0.02)
        raise
