"""``worker_mode="hybrid"``: a partly fused dataset decodes natively on threads and runs its per-sample Python
remainder in worker processes (the explicit choice; ``"auto"`` keeps the remainder on threads). Every batch is
checked against thread mode's (exact tensors) or, for a random remainder, against the remainder run here on
thread mode's decoded prefix with each sample's seed."""

import builtins
import gc
import io
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import DataLoader
from spdl_torch.dataloader._remainder import remainder_seed

from tests._utils import images

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 7
PREFIX = [v2.RandomResizedCrop(16, antialias=True), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True)]


def _affine(x):
    return x * 2 - 1  # deterministic, unfused: a Python remainder


class FailOnBlack:
    """Deterministic remainder that raises for an all-black image."""

    def __call__(self, x):
        if float(x.max()) == 0.0:
            raise ValueError("a black image")
        return x + 1


DETERMINISTIC = v2.Compose([*PREFIX, v2.Lambda(_affine)])
RANDOM = v2.Compose([*PREFIX, v2.RandomPerspective(p=1.0), v2.Lambda(_affine)])


@pytest.fixture
def photo_root(tmp_path):
    def make(rng, c, k):
        if c == "b" and k == 3:
            return np.zeros((20, 24, 3), np.uint8)  # the black image: sample 9 (classes sorted, 6 per class)
        return images.noise((20 + k, 24, 3), rng)

    images.write_folder(tmp_path, ["a", "b"], 6, make, name="{k}.png")
    return tmp_path


def _folder(root, transform):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spdl_torch.datasets.ImageFolder(root, transform=transform, seed=SEED)


def _epochs(loader, n=2):
    return [[(x.clone(), y.clone()) for x, y in loader] for _ in range(n)]


def _assert_same(a, b):
    assert len(a) == len(b) and len(a) > 0
    for (x1, y1), (x2, y2) in zip(a, b):
        assert x1.dtype == x2.dtype == torch.float32 and torch.equal(x1, x2) and torch.equal(y1, y2)


def _loader(ds, mode, **kw):
    kw.setdefault("num_workers", 2)
    return DataLoader(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3), worker_mode=mode,
                      **kw)


def test_the_rule_and_the_override(photo_root):
    """``"auto"`` keeps a Python remainder on threads (measured faster here); ``"hybrid"`` is the explicit choice,
    and ``repr`` says which part runs where."""
    partly, fused = _folder(photo_root, DETERMINISTIC), _folder(photo_root, v2.Compose(PREFIX))
    assert partly.spdl_python_remainder() and not partly.spdl_native_loading()
    assert fused.spdl_native_loading() and not fused.spdl_python_remainder()
    for ds in (partly, tud.Subset(partly, [0, 1]), tud.ConcatDataset([partly, fused])):
        assert DataLoader(ds, batch_size=4, num_workers=2).resolved_worker_mode == "thread"
        assert DataLoader(ds, batch_size=4, num_workers=2, worker_mode="hybrid").resolved_worker_mode == "hybrid"
    loader = DataLoader(partly, batch_size=4, num_workers=2, worker_mode="hybrid")
    assert ("worker_mode='hybrid': decodes natively on 2 worker threads, runs the per-sample Python remainder in "
            "2 worker processes") in repr(loader)

    class Plain(tud.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i

    assert DataLoader(tud.ConcatDataset([partly, Plain()]), num_workers=2).resolved_worker_mode == "process"
    assert DataLoader(partly, num_workers=2, worker_mode="process").resolved_worker_mode == "process"
    assert DataLoader(partly, num_workers=0, worker_mode="hybrid").resolved_worker_mode == "main"


@pytest.mark.parametrize("persistent", [False, True])
def test_a_deterministic_remainder_gives_thread_modes_batches(photo_root, persistent):
    ds = _folder(photo_root, DETERMINISTIC)
    threads = _epochs(_loader(ds, "thread", persistent_workers=persistent))
    hybrid_loader = _loader(ds, "hybrid", persistent_workers=persistent)
    assert hybrid_loader.resolved_worker_mode == "hybrid"
    hybrid = _epochs(hybrid_loader)
    for a, b in zip(threads, hybrid):
        _assert_same(a, b)
        assert a[0][0].shape == (4, 3, 16, 16)
    assert not torch.equal(hybrid[0][0][0], hybrid[1][0][0])  # the epochs differ (crops drawn per epoch)


def _reference(root, loader_kw, epochs=2):
    """The random remainder run here, per sample with its seed, on thread mode's decoded (fused) prefix."""
    head = _folder(root, v2.Compose(PREFIX))
    loader = _loader(head, "thread", **loader_kw)
    out = _epochs(loader, epochs)
    # the indices of each epoch, in the loader's order: the same generator draws the same permutation
    idx_loader = _loader(tud.TensorDataset(torch.arange(len(head))), "thread", **loader_kw)
    sampler_order = [[int(i) for (b,) in idx_loader for i in b] for _ in range(epochs)]
    rest = v2.Compose([v2.RandomPerspective(p=1.0), v2.Lambda(_affine)])
    ref = []
    for epoch in range(epochs):
        flat = [(img, int(t)) for x, y in out[epoch] for img, t in zip(x, y)]
        done = []
        for (img, t), i in zip(flat, sampler_order[epoch]):
            torch.manual_seed(remainder_seed(SEED, epoch, i))
            done.append((rest(img), t))
        ref.append([(torch.stack([d[0] for d in done[k:k + 4]]), torch.tensor([d[1] for d in done[k:k + 4]]))
                    for k in range(0, len(done), 4)])
    return ref


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("num_workers", [2, 3])
def test_a_random_remainder_is_seeded_per_sample(photo_root, num_workers):
    """Each sample's remainder draws from the global RNG seeded with remainder_seed(seed, epoch, index): the
    same tensors for any number of workers, equal to the remainder run here on thread mode's prefix."""
    ds = _folder(photo_root, RANDOM)
    hybrid = _epochs(_loader(ds, "hybrid", num_workers=num_workers))
    ref = _reference(photo_root, {"num_workers": num_workers})
    for a, b in zip(hybrid, ref):
        _assert_same(a, b)


def test_resume_gives_the_uninterrupted_epoch(photo_root):
    ds = _folder(photo_root, RANDOM)
    full = _epochs(_loader(ds, "hybrid"), 1)[0]
    loader = _loader(ds, "hybrid")
    it = iter(loader)
    head = [(x.clone(), y.clone()) for x, y in (next(it) for _ in range(2))]
    state = loader.state_dict()
    del it
    resumed = _loader(_folder(photo_root, RANDOM), "hybrid")
    resumed.load_state_dict(state)
    _assert_same(head + [(x.clone(), y.clone()) for x, y in resumed], full)



@pytest.mark.parametrize("in_order", [True, False])
def test_skip_drops_what_thread_mode_drops(photo_root, in_order):
    ds = _folder(photo_root, v2.Compose([v2.Resize((16, 16), antialias=True), v2.ToDtype(torch.float32, scale=True),
                                         FailOnBlack()]))

    def run(mode):
        loader = DataLoader(ds, batch_size=4, num_workers=2, worker_mode=mode, on_error="skip", in_order=in_order)
        assert loader.resolved_worker_mode == mode
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = sorted(((x.clone(), y.clone()) for x, y in loader), key=lambda b: (b[1].tolist(), float(b[0].sum())))
        return batches, loader.skipped_samples, [str(w.message) for w in caught if "a black image" in str(w.message)]

    (threads, t_skipped, t_warn), (hybrid, h_skipped, h_warn) = run("thread"), run("hybrid")
    assert t_skipped == h_skipped == [(9, "ValueError: a black image")]
    assert len(t_warn) == len(h_warn) == 1 and "9" in h_warn[0]
    assert sum(len(y) for _, y in hybrid) == 11
    _assert_same(threads, hybrid)


def test_a_remainder_error_is_reraised_with_its_type(photo_root):
    ds = _folder(photo_root, v2.Compose([v2.Resize((16, 16), antialias=True), v2.ToDtype(torch.float32, scale=True),
                                         FailOnBlack()]))
    loader = DataLoader(ds, batch_size=4, num_workers=2, worker_mode="hybrid")
    with pytest.raises(ValueError, match="a black image"):
        list(loader)


def test_results_of_different_shapes_come_back_as_a_list(photo_root):
    def crop_by_label(x):
        return x[:, : 4 + int(x.sum()) % 3]  # shapes differ per sample

    ds = _folder(photo_root, v2.Compose([v2.Resize((8, 8), antialias=True), v2.Lambda(crop_by_label)]))
    collate = lambda samples: [s[0] for s in samples]  # noqa: E731
    threads = [b for b in DataLoader(ds, batch_size=4, num_workers=2, worker_mode="thread", collate_fn=collate)]
    hybrid = [b for b in DataLoader(ds, batch_size=4, num_workers=2, worker_mode="hybrid", collate_fn=collate)]
    assert [len(b) for b in hybrid] == [4, 4, 4]
    assert len({x.shape for b in hybrid for x in b}) > 1
    assert all(torch.equal(a, b) for ba, bb in zip(threads, hybrid) for a, b in zip(ba, bb))


def _alive(pid):
    """Whether process ``pid`` runs (a zombie does not). A process that ends between the open and the read of its
    stat file makes the read fail with ESRCH (``ProcessLookupError``): gone, like a missing file."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_process_that_ends_while_its_stat_is_read_is_gone(monkeypatch):
    class Ending(io.StringIO):
        def read(self, *args):
            raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(builtins, "open", lambda *a, **k: Ending())
    assert _alive(os.getpid()) is False


def _wait_gone(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def test_pool_processes_end_with_the_iterator_and_the_loader(photo_root):
    ds = _folder(photo_root, DETERMINISTIC)
    it = iter(DataLoader(ds, batch_size=4, num_workers=2, worker_mode="hybrid"))
    next(it)
    pids = it._remainder.pids()
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    del it
    gc.collect()
    assert _wait_gone(pids) == []

    loader = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True, worker_mode="hybrid")
    list(loader)
    it = iter(loader)
    pids = it._remainder.pids()
    next(it)
    list(loader)  # the same processes across epochs
    assert iter(loader)._remainder.pids() == pids
    del it, loader
    gc.collect()
    assert _wait_gone(pids) == []


EXIT_SCRIPT = textwrap.dedent("""
    import sys, warnings
    import torch
    from torchvision.transforms import v2
    import spdl_torch
    warnings.simplefilter("ignore")
    ds = spdl_torch.datasets.ImageFolder(sys.argv[1], transform=v2.Compose([
        v2.Resize((16, 16), antialias=True), v2.Lambda(lambda x: x.flip(-1))]))
    loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=sys.argv[2] == "1",
                                   worker_mode="hybrid")
    it = iter(loader)
    next(it)
    print(" ".join(map(str, it._remainder.pids())), flush=True)
""")


@pytest.mark.slow  # ~3.5 s each: a child interpreter per case
@pytest.mark.parametrize("persistent", ["0", "1"])
def test_exit_in_the_middle_of_an_epoch_ends_the_pool(photo_root, persistent):
    """Leaving with batches in flight: exit status 0, nothing on stderr, every pool process gone."""
    proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(photo_root), persistent], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2 and _wait_gone(pids) == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_pinned_and_device_batches_equal_thread_modes(photo_root):
    ds = _folder(photo_root, DETERMINISTIC)
    for kw in (dict(pin_memory=True), dict(device="cuda")):
        threads = _epochs(_loader(ds, "thread", **kw), 1)[0]
        hybrid = _epochs(_loader(ds, "hybrid", **kw), 1)[0]
        if "pin_memory" in kw:
            assert all(x.is_pinned() for x, _ in hybrid)
        else:
            assert all(x.device.type == "cuda" for x, _ in hybrid)
        _assert_same([(x.cpu(), y.cpu()) for x, y in threads], [(x.cpu(), y.cpu()) for x, y in hybrid])


@pytest.mark.slow
def test_a_spawned_pool_gets_the_remainder_pickled(photo_root):
    """With a ``spawn`` context nothing is inherited: the remainder is pickled with each batch, same tensors."""
    ds = _folder(photo_root, RANDOM)
    forked = _epochs(_loader(ds, "hybrid"), 1)[0]
    spawned_loader = _loader(ds, "hybrid", multiprocessing_context="spawn")
    _assert_same(forked, _epochs(spawned_loader, 1)[0])


@pytest.mark.slow
def test_an_unpicklable_remainder_with_spawn_raises_clearly(photo_root):
    ds = _folder(photo_root, v2.Compose([v2.Resize((8, 8), antialias=True), v2.Lambda(lambda x: x + 1)]))
    loader = DataLoader(ds, batch_size=4, num_workers=1, worker_mode="hybrid", multiprocessing_context="spawn")
    with pytest.raises(TypeError, match="must be pickled to reach the worker processes .*'spawn'.*no lambda"):
        next(iter(loader))
