"""Fault tests for spdl_torch.DataLoader (worker threads): a sample that raises, blocks, has the wrong shape,
or whose file disappears mid-epoch gives the documented error naming the sample, and no good sample is lost
or duplicated (every index is counted).

Documented behaviour (as torch.utils.data.DataLoader): the failing *batch* raises in the consumer as
``Caught <Type> in DataLoader worker thread <id> while loading sample indices [...]`` with the original type;
the iterator then goes on with the next batch; ``timeout`` raises ``RuntimeError("DataLoader timed out after
N seconds")`` and ends the epoch.
"""

import collections
import os
import threading
import time

import pytest
import torch

import spdl_torch

from tests._utils import images


def _drain(loader) -> tuple[list, list[Exception]]:
    """Iterates to the end, collecting batches and the exceptions raised between them."""
    batches, errors = [], []
    it = iter(loader)
    while True:
        try:
            batches.append(next(it))
        except StopIteration:
            return batches, errors
        except Exception as e:  # noqa: BLE001 - the test inspects every error
            errors.append(e)
            if len(errors) > 100:
                raise


class _Faulty(torch.utils.data.Dataset):
    def __init__(self, n: int, raise_at=(), wrong_shape_at=()) -> None:
        self.n, self.raise_at, self.wrong_shape_at = n, set(raise_at), set(wrong_shape_at)
        self.calls = collections.Counter()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        with self.lock:
            self.calls[i] += 1
        if i in self.raise_at:
            raise ValueError(f"sample {i} is broken")
        if i in self.wrong_shape_at:
            return torch.full((2,), i)
        return torch.full((3,), i)


@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_raising_sample_names_it_and_loses_nothing_else(batch_size, num_workers):
    ds = _Faulty(40, raise_at={5, 17})
    batches, errors = _drain(spdl_torch.DataLoader(ds, batch_size=batch_size, num_workers=num_workers, worker_mode="thread"))
    bad_batches = {5 // batch_size, 17 // batch_size}
    assert len(errors) == len(bad_batches)
    for e, b in zip(errors, sorted(bad_batches)):
        assert isinstance(e, ValueError)
        idx = list(range(b * batch_size, (b + 1) * batch_size))
        if num_workers:
            assert f"while loading sample indices {idx}" in str(e)
        assert any(f"sample {i} is broken" in str(e) for i in idx)
    got = collections.Counter(int(v) for batch in batches for v in batch[:, 0])
    expected = [i for i in range(40) if i // batch_size not in bad_batches]
    assert sorted(got.elements()) == expected, "good samples lost or duplicated"
    assert all(ds.calls[i] == 1 for i in range(40) if i // batch_size not in bad_batches)


def test_wrongly_shaped_sample_fails_its_batch_naming_indices():
    ds = _Faulty(16, wrong_shape_at={6})
    batches, errors = _drain(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, worker_mode="thread"))
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    assert "while loading sample indices [4, 5, 6, 7]" in str(errors[0])
    assert "stack expects each tensor to be equal size" in str(errors[0])
    got = sorted(int(v) for batch in batches for v in batch[:, 0])
    assert got == [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15]


@pytest.mark.slow  # waits out its timeout, ~6 s
def test_blocked_sample_times_out_and_threads_exit_once_released():
    release = threading.Event()

    class Blocking(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> int:
            if i == 3:
                release.wait(30)
            return i

    threads_before = len(os.listdir("/proc/self/task"))
    got = []
    t0 = time.monotonic()
    it = iter(spdl_torch.DataLoader(Blocking(), batch_size=1, num_workers=2, timeout=1.0))
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 1(\.0)? seconds"):
        while True:
            got.append(int(next(it)))
    elapsed = time.monotonic() - t0
    assert elapsed < 25, f"timeout=1 took {elapsed:.1f} s: the release at 30 s came first"
    assert got == [0, 1, 2], "samples before the blocked one arrive in order, none duplicated"
    del it
    release.set()
    deadline = time.monotonic() + 5
    while len(os.listdir("/proc/self/task")) > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(os.listdir("/proc/self/task")) <= threads_before, "worker threads outlived the loader"


def test_file_deleted_mid_epoch(tmp_path, image_folder):
    image_folder(("cat", "dog"), 20, lambda rng, c, k: images.noise((8, 8, 3), rng, high=255), name="{k:02d}.png")
    ds = spdl_torch.datasets.ImageFolder(str(tmp_path))
    victim_index = 31
    victim = ds.samples[victim_index][0]
    loader = spdl_torch.DataLoader(ds, batch_size=1, num_workers=2, collate_fn=lambda b: b[0])
    it = iter(loader)
    got, errors = [], []
    first = next(it)  # the loader has started (and prefetched a few samples)
    got.append(first)
    os.remove(victim)
    while True:
        try:
            got.append(next(it))
        except StopIteration:
            break
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    assert len(errors) == 1, errors
    assert isinstance(errors[0], FileNotFoundError)
    assert victim in str(errors[0]) and f"sample indices [{victim_index}]" in str(errors[0])
    labels = collections.Counter(label for _, label in got)
    assert len(got) == 39 and labels == {0: 20, 1: 19}
    # Each good image exactly once: the decoded pixels match the files still on disk one to one.
    expected = collections.Counter(spdl_torch.io.decode_image(p).numpy().tobytes()
                                   for i, (p, _) in enumerate(ds.samples) if i != victim_index)
    assert collections.Counter(img.numpy().tobytes() for img, _ in got) == expected
