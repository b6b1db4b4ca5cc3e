"""Where the workers run (``worker_mode``): the ``"auto"`` rule (threads for datasets that declare native loading,
a per-sample Python remainder included -- ``worker_mode="hybrid"`` sends it to processes: ``test_remainder.py``
--, torch's worker processes for any other), what process mode keeps of our loader, and patching torch's name."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch.utils.data as tud
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import DataLoader, get_worker_info
from spdl_torch.dataloader._torch import TORCH_DATALOADER

from tests._utils import images

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Squares(tud.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return i * i


class Draws(tud.Dataset):
    """Sample i: (i, a draw from the worker's global torch RNG)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return torch.tensor([float(i), torch.rand(()).item()])


class Counter(tud.IterableDataset):
    def __iter__(self):
        info = tud.get_worker_info()
        return iter(range(info.id, 12, info.num_workers) if info else range(12))


# -- patching torch's name ---------------------------------------------------------------------------------------

PATCH_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import torch.utils.data as tud, torch.utils.data.dataloader as tdl
    original = tdl.DataLoader
    if sys.argv[1] == "before":
        class OtherLibrarysLoader(tud.DataLoader):  # torch's names already replaced when spdl_torch is imported
            pass
        tud.DataLoader = tdl.DataLoader = OtherLibrarysLoader
    import spdl_torch
    assert spdl_torch.DataLoader.__mro__[1] is original, spdl_torch.DataLoader.__mro__
    tud.DataLoader = tdl.DataLoader = spdl_torch.DataLoader

    class Squares(tud.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i * i

    warnings.simplefilter("ignore")
    out = []
    for name in ("DataLoader", "dataloader.DataLoader"):
        cls = tud.DataLoader if name == "DataLoader" else tdl.DataLoader
        for kw in (dict(), dict(num_workers=2), dict(num_workers=2, worker_mode="thread"),
                   dict(num_workers=2, multiprocessing_context="fork", persistent_workers=True)):
            loader = cls(Squares(), batch_size=3, **kw)
            assert isinstance(loader, original)
            out.append([b.tolist() for b in loader] + [b.tolist() for b in loader])
    print(json.dumps(out))
""")


@pytest.mark.slow
@pytest.mark.parametrize("order", ["after", "before"])
def test_patching_torchs_dataloader_name(order, tmp_path):
    """``torch.utils.data.DataLoader = spdl_torch.DataLoader`` (and ``torch.utils.data.dataloader.DataLoader``)
    constructs and iterates in every mode; also when torch's name was already replaced before ``import
    spdl_torch`` (ours still subclasses torch's own class)."""
    script = tmp_path / "patch.py"
    script.write_text(PATCH_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), order], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-3000:]
    epoch = [[0, 1, 4], [9, 16, 25], [36, 49, 64], [81]]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [epoch + epoch] * 8


def test_torch_class_is_bound_once():
    assert TORCH_DATALOADER is torch.utils.data.dataloader.__dict__["DataLoader"]
    assert DataLoader.__mro__[1] is TORCH_DATALOADER


# -- the rule ------------------------------------------------------------------------------------------------------

FUSED = v2.Compose([v2.RandomResizedCrop(16, antialias=True), v2.RandomHorizontalFlip(), v2.ToImage(),
                    v2.ToDtype(torch.float32, scale=True)])
PARTLY_FUSED = v2.Compose([v2.RandomResizedCrop(16, antialias=True), v2.RandomPerspective(p=1.0),
                           v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])


@pytest.fixture
def photo_root(tmp_path):
    images.write_folder(tmp_path, ["a", "b"], 6, lambda rng, c, k: images.noise((20 + k, 24, 3), rng))
    return tmp_path


def _mode(dataset, **kw):
    kw.setdefault("num_workers", 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DataLoader(dataset, batch_size=4, **kw).resolved_worker_mode


def test_auto_runs_python_datasets_in_processes_and_native_ones_on_threads(photo_root):
    ImageFolder = spdl_torch.datasets.ImageFolder
    fused = ImageFolder(photo_root, transform=FUSED)
    assert fused.plan is not None and fused.plan.rest is None and fused.spdl_native_loading()
    partly = ImageFolder(photo_root, transform=PARTLY_FUSED, warn_unfused=False)
    assert partly.plan is not None and partly.plan.per_sample is not None and not partly.spdl_native_loading()
    assert _mode(fused) == "thread"
    assert _mode(ImageFolder(photo_root)) == "thread"  # no transform: decoded natively
    assert _mode(partly) == "thread"  # a per-sample Python remainder too (measured faster than processes)
    assert _mode(partly, worker_mode="hybrid") == "hybrid"
    assert _mode(ImageFolder(photo_root, transform=FUSED, loader=lambda p: p)) == "process"  # a custom loader
    assert _mode(tud.Subset(fused, [0, 1])) == "thread"
    assert _mode(tud.ConcatDataset([fused, fused])) == "thread"
    assert _mode(tud.ConcatDataset([fused, Squares()])) == "process"
    assert _mode(Squares()) == "process" and _mode(Counter()) == "process"
    assert _mode(Squares(), num_workers=0) == "main" and _mode(fused, num_workers=0) == "main"
    assert _mode(Squares(), worker_mode="thread") == "thread" and _mode(fused, worker_mode="process") == "process"
    # options only threads have choose threads
    assert _mode(Squares(), on_error="skip") == "thread" and _mode(Squares(), dataset_per_worker=False) == "thread"


def test_worker_mode_checks():
    with pytest.raises(ValueError, match="worker_mode should be one of"):
        DataLoader(Squares(), worker_mode="processes")
    with pytest.raises(ValueError, match="worker_mode='process' does not support on_error='skip'"):
        DataLoader(Squares(), batch_size=2, num_workers=2, worker_mode="process", on_error="skip")
    with pytest.raises(ValueError, match="dataset_per_worker=False"):
        DataLoader(Squares(), num_workers=2, worker_mode="process", dataset_per_worker=False)


def test_repr_says_where_the_workers_run():
    assert "worker_mode='auto': loads in torch's worker processes" in repr(DataLoader(Squares(), num_workers=2))
    assert "worker_mode='thread': loads on worker threads" in repr(DataLoader(Squares(), num_workers=2,
                                                                             worker_mode="thread"))
    assert "in the calling thread (num_workers=0)" in repr(DataLoader(Squares()))


def test_a_fused_dataset_gives_the_same_batches_on_threads_and_in_processes(photo_root):
    ds = spdl_torch.datasets.ImageFolder(photo_root, transform=FUSED)

    def run(mode):
        loader = DataLoader(ds, batch_size=4, num_workers=2, shuffle=True, worker_mode=mode,
                            generator=torch.Generator().manual_seed(3))
        return [(x.clone(), y.clone()) for x, y in loader], loader.resolved_worker_mode

    (threads, m1), (procs, m2) = run("auto"), run("process")
    assert (m1, m2) == ("thread", "process") and len(threads) == len(procs) == 3
    for (x1, y1), (x2, y2) in zip(threads, procs):
        assert x1.shape == (4, 3, 16, 16) and torch.equal(x1, x2) and torch.equal(y1, y2)


# -- process mode: torch's semantics, plus what our loader adds ---------------------------------------------------

@pytest.mark.parametrize("kw", [dict(), dict(shuffle=True), dict(shuffle=True, persistent_workers=True)],
                         ids=["seq", "shuffle", "shuffle-persistent"])
def test_process_mode_equals_torch(kw):
    """The same batches as torch's DataLoader with the same generator, global RNG draws of the workers
    included, over two epochs."""

    def run(cls):
        loader = cls(Draws(), batch_size=3, num_workers=2, generator=torch.Generator().manual_seed(5), **kw)
        return [[b.tolist() for b in loader] for _ in range(2)]

    assert run(DataLoader) == run(TORCH_DATALOADER)


class SampleDraws(tud.Dataset):
    """Sample i: (i, a draw from spdl_torch's per-sample generator, which processes have too)."""

    def __len__(self):
        return 11

    def __getitem__(self, i):
        return torch.tensor([float(i), torch.rand((), generator=get_worker_info().sample_generator(i)).item()])


@pytest.mark.parametrize("persistent", [False, True])
def test_process_mode_resume_equals_uninterrupted(persistent):
    """The remaining batches in the same order with the same base seed (so the same per-sample draws), also
    in the second epoch of persistent workers; the sampler is fast-forwarded, nothing loaded for the head."""

    def make():
        return DataLoader(SampleDraws(), batch_size=2, num_workers=2, shuffle=True,
                          generator=torch.Generator().manual_seed(11), persistent_workers=persistent)

    def epochs(loader):
        return [[b.tolist() for b in loader] for _ in range(2)]

    full = epochs(make())
    loader = make()
    assert [b.tolist() for b in loader] == full[0]
    it = iter(loader)
    head = [next(it).tolist() for _ in range(2)]
    state = loader.state_dict()
    del it
    resumed = make()
    resumed.load_state_dict(state)
    assert resumed.resolved_worker_mode == "process"
    assert head + [b.tolist() for b in resumed] == full[1]


def test_process_mode_state_of_an_iterable_dataset_mid_epoch_raises():
    loader = DataLoader(Counter(), batch_size=2, num_workers=2)
    it = iter(loader)
    first = next(it).tolist()
    with pytest.raises(RuntimeError, match="worker_mode='thread'"):
        loader.state_dict()
    assert sorted(first + [int(x) for b in it for x in b]) == list(range(12))  # the epoch goes on


def _report_info(i):
    info = get_worker_info()
    return [info.id, info.base_seed, info.seed, info.epoch, info.worker_method == "multiprocessing"]


class InfoDataset(tud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return _report_info(i)


@pytest.mark.parametrize("persistent", [False, True])
def test_process_mode_worker_info_and_epochs(persistent):
    """spdl_torch's get_worker_info() answers in the worker processes too, with the loader's epoch."""
    loader = DataLoader(InfoDataset(), batch_size=None, num_workers=2, persistent_workers=persistent)
    for epoch in range(3):
        got = [[int(v) for v in x] for x in loader]
        ids = [g[0] for g in got]
        assert ids == [0, 1, 0, 1]
        base = got[0][1]
        assert all(g[1] == base and g[2] == base + g[0] and g[3] == epoch and g[4] for g in got)


class RngDataset(tud.Dataset):
    """Sample i: which of the worker's generators existed before this sample, then one draw from each."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        rng = get_worker_info().rng
        made = [_made(rng, name) for name in ("random_generator", "torch_generator", "numpy_generator")]
        return [made, rng.random_generator.random(), rng.torch_generator.initial_seed(),
                float(rng.numpy_generator.random()), get_worker_info().seed]


def _made(rng, name):
    try:
        object.__getattribute__(rng, name)
        return True
    except AttributeError:
        return False


def test_process_mode_worker_generators_are_made_on_first_use():
    """get_worker_info().rng in a worker process: its generators do not exist before the dataset asks for them
    (a worker that never draws pays nothing), then they are random.Random / torch.Generator /
    numpy.random.default_rng seeded with the worker's seed, made once per worker."""
    import random

    import numpy as np

    loader = DataLoader(RngDataset(), batch_size=None, num_workers=2, worker_mode="process")
    got = list(loader)
    for k, (made, r, torch_seed, np_draw, seed) in enumerate(got):
        assert made == [k >= 2] * 3  # the worker's first sample found none, its second all three
        nth = 1 + k // 2  # draws so far from this worker's generators
        ref, np_ref = random.Random(seed), np.random.default_rng(seed)
        assert r == [ref.random() for _ in range(nth)][-1]
        assert np_draw == [float(np_ref.random()) for _ in range(nth)][-1]
        assert torch_seed == seed


def test_worker_generators_pickle_with_their_state():
    import pickle

    from spdl_torch.dataloader._worker import make_thread_rng

    rng = make_thread_rng(7)
    rng.random_generator.random()
    copy = pickle.loads(pickle.dumps(rng))
    assert copy.random_generator.random() == rng.random_generator.random()
    assert not _made(copy, "torch_generator")  # not made before the copy: made on first use there too
    assert copy.torch_generator.initial_seed() == 7


IMPORT_PROBE = textwrap.dedent("""
    import os, sys, threading
    import torch
    tasks, names = len(os.listdir("/proc/self/task")), set(threading.enumerate())
    import spdl_torch
    print(len(os.listdir("/proc/self/task")) - tasks, len(set(threading.enumerate()) - names))
""")


@pytest.mark.slow
def test_importing_spdl_torch_starts_no_thread():
    """Worker processes fork from the importing process: the import starts no thread (native ones included:
    the decode pool is made on first use), so a fork copies none and at-fork handlers have none to stop."""
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "0"]


def test_multiprocessing_context_is_used_without_a_warning_in_process_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = DataLoader(Squares(), batch_size=5, num_workers=2, multiprocessing_context="fork")
        assert [b.tolist() for b in loader] == [[0, 1, 4, 9, 16], [25, 36, 49, 64, 81]]


@pytest.mark.parametrize("mode", ["thread", "hybrid", "process"])
def test_device_cuda_in_every_mode(mode):
    """``device="cuda"``: batches on the device equal to the CPU ones with CUDA; without it a ValueError that
    says so, whatever the worker mode."""
    data = [torch.full((2,), float(i)) for i in range(6)]
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            DataLoader(data, batch_size=2, num_workers=2, device="cuda", worker_mode=mode)
        return
    loader = DataLoader(data, batch_size=2, num_workers=2, device="cuda", worker_mode=mode)
    assert loader.resolved_worker_mode == mode
    out = list(loader)
    assert all(b.is_cuda for b in out)
    expected = list(DataLoader(data, batch_size=2))
    assert len(out) == len(expected) == 3 and all(torch.equal(a.cpu(), b) for a, b in zip(out, expected))
