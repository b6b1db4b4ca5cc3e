"""Copies of a DataLoader (``copy.deepcopy``, ``pickle``) and of the datasets it wraps.

A copy holds no iterator, workers or lock of the original; it has the original's arguments, worker mode, epoch
counter, pending loaded state, ``skipped_samples`` and ``state_dict()``, and goes on from there: a copy made
between epochs gives the next epoch, as torch's copy of torch's DataLoader does (the same dataset and
generator); one made mid-epoch gives the rest of that epoch (as a new loader after ``load_state_dict``), then
the following epochs. The original goes on unchanged. A copy of a loader whose persistent workers run (torch's
DataLoader refuses it) starts its own workers, on the ``base_seed`` the original's keep."""

import copy
import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import types
import warnings

import pytest
import torch
import torch.utils.data as tud
from torch.utils._pytree import tree_flatten
from torchvision.transforms import v2

import spdl_torch
from spdl_torch.datasets import (AudioDataset, FileListDataset, ImageFolder, PipelineDataset, TarShardDataset,
                                 VideoClipDataset, write_shards)
from spdl_torch.dataloader._torch import TORCH_DATALOADER
from spdl_torch.pipeline import PipelineBuilder

from tests._utils import images
from tests._utils.loaders import OUR_THREAD_PREFIX

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N, BS = 11, 3  # 4 batches per epoch, the last one short

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def _deepcopy(obj):
    return copy.deepcopy(obj)


def _pickle(obj):
    return pickle.loads(pickle.dumps(obj))


HOW = [pytest.param(_deepcopy, id="deepcopy"), pytest.param(_pickle, id="pickle")]


class Draws(tud.Dataset):
    """Sample i: ``[i, a draw from the global torch RNG of the worker that loads it]`` (``-1`` without workers)."""

    def __len__(self):
        return N

    def __getitem__(self, i):
        draw = int(torch.randint(0, 1 << 30, ())) if tud.get_worker_info() is not None else -1
        return torch.tensor([i, draw])


class FailsAt4(Draws):
    def __getitem__(self, i):
        if i == 4:
            raise ValueError("sample 4 is bad")
        return torch.tensor([i, 0])


def _batches(iterable, n=None) -> list:
    """The next ``n`` batches (all with ``None``) as lists."""
    it = iter(iterable)
    return [b.tolist() for b in (it if n is None else (next(it) for _ in range(n)))]


def _indices(batches) -> list:
    return [row[0] for b in batches for row in b]


def _draws(batches) -> list:
    return [row[1] for b in batches for row in b]


def _same(a, b) -> bool:
    """Equality of states: nested dicts and lists of plain values and tensors."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


MODES = {  # ours; torch's DataLoader gets the same arguments less these
    "main": dict(num_workers=0),
    # per-worker global RNGs: batch i on worker i % 2, seeded as torch seeds its processes (torch's draws exactly)
    "thread": dict(num_workers=2, worker_mode="thread", worker_rng="per_worker"),
    "process": dict(num_workers=2, worker_mode="process"),
}
OURS_ONLY = ("worker_mode", "worker_rng")


def _pair(mode, **kw):
    """Ours in ``mode`` and torch's DataLoader over the same dataset, with equal generators."""
    args = dict(batch_size=BS, shuffle=True, **MODES[mode], **kw)
    ours = spdl_torch.DataLoader(Draws(), generator=torch.Generator().manual_seed(5), **args)
    ref = tud.DataLoader(Draws(), generator=torch.Generator().manual_seed(5),
                         **{k: v for k, v in args.items() if k not in OURS_ONLY})
    return ours, ref


def _mode_params():
    out = []
    for mode in MODES:
        for k, when in enumerate(("fresh", "partial", "epoch")):
            for j, how in enumerate(HOW):
                # both copies go through __getstate__ / __setstate__: one of them per case in the fast tier; process
                # mode starts worker processes for each loader and copy: one case
                slow = j != k % 2 or (mode == "process" and when != "partial")
                out.append(pytest.param(mode, when, how.values[0], id=f"{mode}-{when}-{how.id}",
                                        marks=[pytest.mark.slow] if slow else []))
    return out


@pytest.mark.parametrize("mode,when,how", _mode_params())
def test_a_copy_goes_on_as_the_original_and_as_torchs_loader(mode, when, how):
    """Made before any iteration, after 2 batches of an epoch or after a whole epoch, the copy has the
    original's ``state_dict()`` and gives what torch's DataLoader gives from there: its copy's next epoch (order,
    and the workers' draws: the epoch's base seed), or the rest of the running epoch (the order: resumed
    workers draw anew) and then its next epoch; the original goes on the same."""
    ours, ref = _pair(mode)
    our_it = ref_it = None
    if when != "fresh":
        our_it, ref_it = iter(ours), iter(ref)
        steps = 2 if when == "partial" else None
        assert _batches(our_it, steps) == _batches(ref_it, steps)
    ours_copy, ref_copy = how(ours), how(ref) if when != "partial" else None
    assert type(ours_copy) is spdl_torch.DataLoader and ours_copy._iterator is None
    assert ours_copy.resolved_worker_mode == ours.resolved_worker_mode and ours_copy._epoch == ours._epoch
    assert _same(ours_copy.state_dict(), ours.state_dict())
    if when == "partial":
        ref_rest = _batches(ref_it)
        assert _indices(_batches(ours_copy)) == _indices(ref_rest)
        assert _batches(our_it) == ref_rest  # the original's epoch goes on where it was
    ref_next = _batches(ref)
    if when != "partial":  # torch's copy (made mid-epoch, it starts a new epoch from its generator's state then)
        assert _batches(ref_copy) == ref_next
    assert _batches(ours_copy) == ref_next and sorted(_indices(ref_next)) == list(range(N))
    assert _batches(ours) == ref_next


@pytest.mark.parametrize("mode,when", [("main", "partial"), ("thread", "fresh"), ("thread", "partial"),
                                       ("thread", "epoch"),
                                       pytest.param("process", "partial", marks=pytest.mark.slow)])
@pytest.mark.parametrize("how", HOW)
def test_the_copy_resumes_as_a_loader_that_loaded_the_originals_state(mode, when, how):
    """``state_dict()`` of the copy is the original's, and the copy gives what a new loader given that state
    with ``load_state_dict`` gives."""
    ours, _ = _pair(mode)
    it = iter(ours) if when != "fresh" else None  # held: the latest iterator is what state_dict() describes
    if it is not None:
        _batches(it, 2 if when == "partial" else None)
    ours_copy = how(ours)
    state = ours.state_dict()
    assert _same(ours_copy.state_dict(), state) and state["finished"] == (when != "partial")
    again = spdl_torch.DataLoader(Draws(), batch_size=BS, shuffle=True, generator=torch.Generator(), **MODES[mode])
    again.load_state_dict(state)
    assert [_batches(ours_copy) for _ in range(2)] == [_batches(again) for _ in range(2)]


# -- persistent workers running -----------------------------------------------------------------------------------

def _our_threads():
    return {t for t in threading.enumerate() if t.name.startswith(OUR_THREAD_PREFIX)}


@pytest.mark.parametrize("mode,when,how", [
    ("thread", "between", _deepcopy), ("thread", "partial", _pickle),
    *[pytest.param(m, w, h, marks=pytest.mark.slow) for m, w, h in [
        ("thread", "between", _pickle), ("thread", "partial", _deepcopy), ("process", "between", _pickle),
        ("process", "partial", _deepcopy)]],
])
def test_a_copy_of_a_loader_with_persistent_workers_running_starts_its_own(mode, when, how):
    """torch's DataLoader refuses to copy its running iterator (``NotImplementedError``); ours leaves it: the copy
    starts its own workers, seeded with the ``base_seed`` the original's keep, and the original's workers go on.
    Made between epochs, the copy's next epoch has the order of torch's (persistent workers draw no new
    ``base_seed``) and the draws of fresh workers on that seed: torch's first epoch's; made after a batch, it
    gives the order of the rest of torch's epoch, then of its next."""
    ours, ref = _pair(mode, persistent_workers=True)
    first = _batches(ref)
    assert _batches(ours) == first
    our_it = ref_it = None
    if when == "partial":
        our_it, ref_it = iter(ours), iter(ref)
        assert _batches(our_it, 1) == _batches(ref_it, 1)
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        how(ref)
    threads, running = _our_threads(), ours._iterator
    ours_copy = how(ours)
    assert ours_copy._iterator is None and ours._iterator is running
    assert _same(ours_copy.state_dict(), ours.state_dict()) and ours.state_dict()["base_seed"] is not None
    got = _batches(ours_copy)
    assert ours_copy._iterator is not None and ours_copy._iterator is not running
    if mode == "thread":  # its own threads; the original's still run
        assert threads <= _our_threads() and not set(ours_copy._iterator._workers._threads) & threads
    if when == "partial":
        ref_rest = _batches(ref_it)
        assert _indices(got) == _indices(ref_rest)
        assert _batches(our_it) == ref_rest  # the original's epoch goes on, on its workers
        got = _batches(ours_copy)
    ref_next = _batches(ref)
    assert _indices(got) == _indices(ref_next)
    if when == "between":
        assert _draws(got) == _draws(first)
    assert _batches(ours) == ref_next


# -- a pending loaded state, skipped samples, iterators ------------------------------------------------------------

@pytest.mark.parametrize("mode,how", [("main", _deepcopy), ("main", _pickle), ("thread", _pickle),
                                      *[pytest.param(m, h, marks=pytest.mark.slow) for m, h in
                                        [("thread", _deepcopy), ("process", _pickle)]]])
def test_a_copy_keeps_a_loaded_state_not_iterated_yet(mode, how):
    """A loader given a mid-epoch state by ``load_state_dict`` and copied before its next ``iter()``: the copy
    holds that state too and gives the rest of the saved epoch; the original still does."""
    ours, ref = _pair(mode)
    it = iter(ours)
    head = _batches(it, 2)
    state = ours.state_dict()
    rest = _batches(it)
    assert head + rest == _batches(ref)
    resumed = spdl_torch.DataLoader(Draws(), batch_size=BS, shuffle=True, generator=torch.Generator(), **MODES[mode])
    resumed.load_state_dict(state)
    resumed_copy = how(resumed)
    assert _same(resumed_copy.state_dict(), resumed.state_dict()) and _same(resumed.state_dict(), state)
    got = _batches(resumed_copy)
    assert got == _batches(resumed)  # the original's pending state is still its own
    # the rest of the saved epoch (the workers' global RNGs are not part of the state: the draws start anew)
    assert _indices(got) == _indices(rest)


class Stream(tud.IterableDataset):
    """0..N-1, split between torch's worker processes."""

    def __iter__(self):
        info = tud.get_worker_info()
        return iter(range(info.id, N, info.num_workers) if info is not None else range(N))


@pytest.mark.parametrize("how", [pytest.param(_deepcopy, id="deepcopy", marks=pytest.mark.slow),
                                 pytest.param(_pickle, id="pickle")])
def test_a_position_process_mode_cannot_save_leaves_the_copy_at_the_next_epoch(how):
    """Process mode mid-epoch of an ``IterableDataset``: ``state_dict()`` raises (torch's workers do not report
    their positions), the copy is still made and starts the next epoch, as torch's copy does."""
    ours = spdl_torch.DataLoader(Stream(), batch_size=2, num_workers=2, worker_mode="process")
    ref = tud.DataLoader(Stream(), batch_size=2, num_workers=2)
    it, ref_it = iter(ours), iter(ref)
    assert next(it).tolist() == next(ref_it).tolist()
    with pytest.raises(RuntimeError, match="needs the workers' positions"):
        ours.state_dict()
    ours_copy, ref_copy = how(ours), how(ref)
    assert ours_copy.state_dict()["finished"] and ours_copy.state_dict()["epoch"] == 0
    assert [b.tolist() for b in ours_copy] == [b.tolist() for b in ref_copy]
    assert [b.tolist() for b in it] == [b.tolist() for b in ref_it]


@pytest.mark.parametrize("how", HOW)
def test_skipped_samples_are_copied_not_shared(how):
    """``skipped_samples`` is copied with the loader; each loader then adds its own epochs' samples."""
    loader = spdl_torch.DataLoader(FailsAt4(), batch_size=BS, num_workers=2, on_error="skip")
    with pytest.warns(UserWarning, match="sample 4 is bad"):
        assert _indices(_batches(loader)) == [i for i in range(N) if i != 4]
    assert loader.skipped_samples == [(4, "ValueError: sample 4 is bad")]
    loader_copy = how(loader)
    assert loader_copy.skipped_samples == loader.skipped_samples
    assert loader_copy.skipped_samples is not loader.skipped_samples
    with pytest.warns(UserWarning, match="sample 4 is bad"):
        _batches(loader_copy)
    assert loader_copy.skipped_samples == [(4, "ValueError: sample 4 is bad")] * 2
    assert loader.skipped_samples == [(4, "ValueError: sample 4 is bad")]


@pytest.mark.parametrize("mode,how", [*[("main", h) for h in (_deepcopy, _pickle, copy.copy)], ("thread", _deepcopy),
                                      *[pytest.param(m, h, marks=pytest.mark.slow) for m, h in
                                        [("thread", _pickle), ("thread", copy.copy), ("process", _pickle)]]])
def test_an_iterator_is_not_copied_as_in_torch(mode, how):
    """torch's iterators raise ``NotImplementedError`` when pickled or copied; ours too, saying why and what to
    copy instead, and go on."""
    ours, ref = _pair(mode)
    ref_it = iter(ref)
    with pytest.raises(NotImplementedError):
        how(ref_it)
    it = iter(ours)
    with pytest.raises(NotImplementedError, match="cannot be pickled or copied: its epoch runs on worker"):
        how(it)
    assert _batches(it) == _batches(ref_it)


def test_a_shallow_copy_does_not_share_the_running_workers():
    """``copy.copy`` (torch's shares the iterator, and with it the persistent workers) makes a loader of its own
    too; the dataset and generator are shared, as in any shallow copy."""
    loader = spdl_torch.DataLoader(Draws(), batch_size=BS, num_workers=2, worker_mode="thread",
                                   persistent_workers=True)
    _batches(loader)
    shallow = copy.copy(loader)
    assert shallow._iterator is None and loader._iterator is not None
    assert shallow.dataset is loader.dataset and shallow.skipped_samples is not loader.skipped_samples
    assert _indices(_batches(shallow)) == _indices(_batches(loader)) == list(range(N))
    assert shallow._iterator is not loader._iterator


# -- fused datasets in "auto" (threads) and "hybrid" ---------------------------------------------------------------

def _twice(x):
    return x * 2  # an unfused remainder (hybrid mode runs it in processes)


FUSED = v2.Compose([v2.RandomResizedCrop(12, antialias=True), v2.RandomHorizontalFlip(),
                    v2.ToDtype(torch.float32, scale=True)])
PARTLY_FUSED = v2.Compose([*FUSED.transforms, v2.Lambda(_twice)])


@pytest.fixture(scope="module")
def photo_paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("copy_photos")
    return [str(p) for p in images.write_folder(root, ["a", "b"], 4, lambda rng, c, k: images.noise((20 + k, 24, 3),
                                                                                                     rng))]


def _file_list(paths, transform):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the partial fusion's note
        return FileListDataset(paths, labels=list(range(len(paths))), transform=transform, seed=3)


def _tensors(batches):
    return [(x.clone(), y.clone()) for x, y in batches]


def _equal(a, b):
    return len(a) == len(b) and all(torch.equal(x, u) and torch.equal(y, v) for (x, y), (u, v) in zip(a, b))


@pytest.mark.parametrize("mode,persistent,how", [
    ("auto", False, _deepcopy), ("auto", True, _pickle), ("hybrid", True, _deepcopy),
    *[pytest.param(m, p, h, marks=pytest.mark.slow) for m, p, h in [
        ("auto", False, _pickle), ("auto", True, _deepcopy), ("hybrid", False, _deepcopy), ("hybrid", True, _pickle)]],
])
def test_a_fused_dataset_loader_copied_mid_epoch(photo_paths, mode, persistent, how):
    """The copy gives the rest of the original's epoch and its next epoch, tensors included (crops from the base
    seed, the epoch and the index: ``"auto"`` runs on threads, ``"hybrid"`` the remainder in processes), in the
    order torch's DataLoader gives with the same generator."""
    transform = FUSED if mode == "auto" else PARTLY_FUSED
    kw = dict(batch_size=3, shuffle=True, num_workers=2, persistent_workers=persistent)
    ours = spdl_torch.DataLoader(_file_list(photo_paths, transform), generator=torch.Generator().manual_seed(8),
                                 worker_mode=mode, **kw)
    assert ours.resolved_worker_mode == ("thread" if mode == "auto" else "hybrid")
    # torch's order does not depend on its workers, but its base_seed is drawn once with persistent ones
    ref = tud.DataLoader(_file_list(photo_paths, transform), generator=torch.Generator().manual_seed(8),
                         **(kw if persistent else dict(kw, num_workers=0)))
    _tensors(ours)  # epoch 0 of both
    list(ref)
    it, ref_it = iter(ours), iter(ref)
    head = _tensors([next(it)])
    next(ref_it)
    ours_copy = how(ours)
    assert ours_copy.resolved_worker_mode == ours.resolved_worker_mode and ours_copy.dataset.epoch == 1
    got = [_tensors(ours_copy) for _ in range(2)]
    want = [_tensors(it), _tensors(ours)]
    assert sorted(int(i) for _, y in head + want[0] for i in y) == list(range(len(photo_paths)))
    assert _equal(got[0], want[0]) and _equal(got[1], want[1])
    labels = [[y.tolist() for _, y in epoch] for epoch in got]
    assert labels == [[y.tolist() for _, y in ref_it], [y.tolist() for _, y in ref]]


# -- a subclass made after the patch-in, Lightning's records ------------------------------------------------------

SUBCLASS_SOURCE = """
import torch.utils.data as tud


class LibraryLoader(tud.DataLoader):  # a library's subclass of whatever torch's name holds at its import
    def __init__(self, *args, note="library", **kwargs):
        super().__init__(*args, **kwargs)
        self.note = note
"""


@pytest.fixture
def patched_in(monkeypatch):
    """``torch.utils.data.DataLoader = spdl_torch.DataLoader``, then a library module defining a subclass of it
    (importable by name, so that pickle finds the class)."""
    import torch.utils.data.dataloader as tdl

    monkeypatch.setattr(tud, "DataLoader", spdl_torch.DataLoader)
    monkeypatch.setattr(tdl, "DataLoader", spdl_torch.DataLoader)
    module = types.ModuleType("library_made_after_the_patch_in")
    exec(compile(SUBCLASS_SOURCE, module.__name__, "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.LibraryLoader


@pytest.mark.parametrize("how", HOW)
def test_a_subclass_made_after_the_patch_in_copies_and_pickles(patched_in, how):
    assert issubclass(patched_in, spdl_torch.DataLoader)
    loader = patched_in(Draws(), batch_size=BS, shuffle=True, num_workers=2, worker_mode="thread",
                        persistent_workers=True, generator=torch.Generator().manual_seed(5), note="kept")
    ref = TORCH_DATALOADER(Draws(), batch_size=BS, shuffle=True, generator=torch.Generator().manual_seed(5))
    assert _indices(_batches(loader)) == _indices(_batches(ref))
    loader_copy = how(loader)
    assert type(loader_copy) is patched_in and loader_copy.note == "kept" and loader_copy._iterator is None
    # the original's next epoch (on its persistent workers; the draws come from the shared global RNG)
    assert _indices(_batches(loader_copy)) == _indices(_batches(loader))


PATCH_SCRIPT = textwrap.dedent("""
    import copy, json, pickle, sys, warnings
    import torch, torch.utils.data as tud, torch.utils.data.dataloader as tdl
    original = tdl.DataLoader
    import spdl_torch
    tud.DataLoader = tdl.DataLoader = spdl_torch.DataLoader

    class LibraryLoader(tud.DataLoader):  # defined after the patch-in, as a library imported later would
        pass

    class Squares(tud.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i * i

    warnings.simplefilter("ignore")
    out = []
    for kw in (dict(), dict(num_workers=2), dict(num_workers=2, worker_mode="thread", persistent_workers=True),
               dict(num_workers=2, multiprocessing_context="fork", persistent_workers=True)):
        loader = LibraryLoader(Squares(), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(2),
                               **kw)
        ref = original(Squares(), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(2))
        it = iter(loader)
        head = [next(it).tolist()]
        copies = [copy.deepcopy(loader), pickle.loads(pickle.dumps(loader))]
        assert all(type(c) is LibraryLoader and c._iterator is None for c in copies)
        epochs = [[b.tolist() for b in it], [b.tolist() for b in loader]]  # the original goes on
        out.append(head + epochs[0] == [b.tolist() for b in ref])
        out.append([[[b.tolist() for b in c] for _ in range(2)] for c in copies] == [epochs, epochs])
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_a_subclass_made_after_the_patch_in_copies_in_a_fresh_interpreter(tmp_path):
    """As the patch-in is used: torch's names replaced in a fresh interpreter, a subclass made after it, its
    loaders copied and pickled in every mode (with persistent workers running) and iterated."""
    script = tmp_path / "patch_copy.py"
    script.write_text(PATCH_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [True] * 8


@pytest.mark.parametrize("how", HOW)
def test_lightnings_recorded_arguments_travel_with_the_copy(how):
    """Lightning records a loader's constructor arguments (``__pl_saved_kwargs`` & co., ours added by
    ``_record_own_arguments``) to re-create it with another sampler: a copy keeps them, naming the copy's own
    dataset, and Lightning re-creates the copy with its class and worker mode."""
    lf_data = pytest.importorskip("lightning_fabric.utilities.data")
    with lf_data._replace_dunder_methods(tud.DataLoader, "dataset"):
        loader = spdl_torch.DataLoader(Draws(), batch_size=BS, num_workers=2, worker_mode="process")
    assert loader.__dict__["__pl_saved_kwargs"]["worker_mode"] == "process"
    loader_copy = how(loader)
    saved = {k: v for k, v in loader.__dict__.items() if k.startswith("__pl_")}
    copied = {k: v for k, v in loader_copy.__dict__.items() if k.startswith("__pl_")}
    assert copied.keys() == saved.keys() and copied["__pl_saved_kwargs"].keys() == saved["__pl_saved_kwargs"].keys()
    assert copied["__pl_saved_args"][0] is loader_copy.dataset is not loader.dataset
    sampler = tud.SequentialSampler(range(N))
    rebuilt = lf_data._update_dataloader(loader_copy, sampler)
    assert type(rebuilt) is spdl_torch.DataLoader and rebuilt.resolved_worker_mode == "process"
    assert rebuilt.sampler is sampler


# -- our datasets ------------------------------------------------------------------------------------------------

def _image_folder(paths):
    return ImageFolder(os.path.dirname(os.path.dirname(paths[0])), transform=FUSED, seed=4)


@pytest.mark.parametrize("name", ["ImageFolder", "FileListDataset", "FileListDataset-partly-fused"])
@pytest.mark.parametrize("how", HOW)
def test_image_datasets_copy_with_their_seed_epoch_and_plan(photo_paths, name, how):
    """As torchvision's ``ImageFolder`` copies: the copy's samples (a batch through ``__getitems__`` and one by
    one) equal the original's, at the epoch it had."""
    ds = {"ImageFolder": lambda: _image_folder(photo_paths), "FileListDataset": lambda: _file_list(photo_paths, FUSED),
          "FileListDataset-partly-fused": lambda: _file_list(photo_paths, PARTLY_FUSED)}[name]()
    ds.set_epoch(3)
    ds_copy = how(ds)
    assert (ds_copy.seed, ds_copy.epoch) == (ds.seed, ds.epoch) == (ds.seed, 3)
    assert ds_copy.state_dict() == ds.state_dict()
    idx = [5, 0, 7]
    assert _same_samples(ds_copy.__getitems__(idx), ds.__getitems__(idx))
    assert all(_same_samples(ds_copy[i], ds[i]) for i in idx)


def _same_samples(a, b) -> bool:
    """Equal structures of equal tensors and values."""
    (la, sa), (lb, sb) = tree_flatten(a), tree_flatten(b)
    return sa == sb and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(la, lb))


@pytest.mark.parametrize("how", [pytest.param(_deepcopy, id="deepcopy"),
                                 pytest.param(_pickle, id="pickle", marks=pytest.mark.slow)])
def test_audio_and_video_datasets_copy(tmp_path, how):
    """Random crops and clips: the copy's batch equals the original's at the epoch it had."""
    from tests._utils import audio as A
    from tests._utils import video as vm

    if A.FFMPEG is None:
        pytest.skip("the ffmpeg CLI is not installed")
    wavs = [A.make_audio(tmp_path / f"{k}.wav", rate=16000, channels=1, codec="pcm_s16le", seconds=0.3)
            for k in range(2)]
    audio = AudioDataset(wavs, labels=[7, 8], sample_rate=8000, num_channels=1, duration=0.1, random_crop=True,
                         seed=2)
    video = VideoClipDataset([vm.make_video("h264_bframes"), vm.make_video("h264_10fps")], num_frames_per_clip=2,
                             num_clips=2, sampling="random", seed=2)
    for ds in (audio, video):
        ds.set_epoch(1)
        ds_copy = how(ds)
        assert ds_copy.state_dict() == ds.state_dict()
        assert _same_samples(ds_copy.__getitems__([1, 0]), ds.__getitems__([1, 0]))


@pytest.fixture(scope="module")
def shard_index(tmp_path_factory):
    d = tmp_path_factory.mktemp("copy_shards")
    samples = [(f"s{i:03d}", {"txt": f"sample {i}".encode(), "cls": str(i % 3).encode()}) for i in range(40)]
    write_shards(samples, d, shard_size=10240)
    return os.path.join(d, "index.json")


def _shard_indices(ds):
    return [s["__index__"] for s in ds]


def _shard_keys(batch):
    return {"__index__": torch.tensor([s["__index__"] for s in batch])}


@pytest.mark.parametrize("how", HOW)
def test_tar_shards_copy_with_their_cache(shard_index, tmp_path, how):
    """A cache directory: the copy uses it with a lock of its own and reads the same samples."""
    ds = TarShardDataset(shard_index, shuffle_buffer=8, seed=1, cache_dir=tmp_path / "cache", cache_bytes=1 << 20)
    ds_copy = how(ds)
    cache, copied = ds.shards.cache, ds_copy.shards.cache
    assert (copied.directory, copied.max_bytes) == (cache.directory, cache.max_bytes) and copied._lock is not cache._lock
    assert _shard_indices(ds_copy) == _shard_indices(ds) == ds.global_order(0)


@pytest.mark.parametrize("how", HOW)
def test_tar_shards_copy_with_a_merged_state(shard_index, how):
    """A merged state loaded: the copy, as the original, gives the saved epoch's remainder once, then whole
    epochs (each is the dataset that loaded the state, not one of its workers' copies)."""
    loader = spdl_torch.DataLoader(TarShardDataset(shard_index, shuffle_buffer=8, seed=1), batch_size=4,
                                   num_workers=2, collate_fn=_shard_keys)
    it = iter(loader)
    head = [i for _ in range(3) for i in next(it)["__index__"].tolist()]
    merged = TarShardDataset.merge_states([loader.state_dict()])
    del it
    ds = TarShardDataset(shard_index, shuffle_buffer=8, seed=1)
    ds.load_state_dict(merged)
    ds_copy = how(ds)
    rest = [i for i in ds.global_order(0) if i not in set(head)]
    assert [_shard_indices(ds_copy) for _ in range(2)] == [rest, ds.global_order(0)]
    assert [_shard_indices(ds) for _ in range(2)] == [rest, ds.global_order(0)]


@pytest.mark.parametrize("how", [pytest.param(_deepcopy, id="deepcopy", marks=pytest.mark.slow),
                                 pytest.param(_pickle, id="pickle")])
def test_remote_tar_shards_copy_after_reading(shard_index, how):
    """After a remote read (the fetcher holds an aiohttp ClientSession on this process's event loop) the copy
    opens its own connections and reads the same samples."""
    pytest.importorskip("aiohttp")
    from spdl_torch.datasets.shards import RetryPolicy

    from tests._utils.range_server import RangeServer

    with RangeServer(os.path.dirname(shard_index)) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle_buffer=8, seed=1,
                             retry=RetryPolicy(attempts=3, timeout=5.0, backoff=0.001, max_backoff=0.01))
        first = _shard_indices(ds)
        ds_copy = how(ds)
        assert _shard_indices(ds_copy) == first == ds.global_order(0)


def test_a_pipeline_dataset_is_not_copied_and_says_why():
    """A live Pipeline's threads belong to this process: deep copies and pickles raise ``TypeError`` naming it (a
    loader's copy too); a shallow copy shares the pipeline."""
    ds = PipelineDataset(PipelineBuilder().add_source(range(4)).add_sink(2).build(num_threads=1))
    loader = tud.DataLoader(ds, batch_size=None)
    ours = spdl_torch.DataLoader(ds, batch_size=None)
    for what in (ds, loader, ours):
        for how in (_deepcopy, _pickle):
            with pytest.raises(TypeError, match="PipelineDataset cannot be pickled or deep-copied: its Pipeline "
                                                "runs its own threads"):
                how(what)
    assert copy.copy(ds).pipeline is ds.pipeline
    assert list(ours) == [0, 1, 2, 3]
