"""state_dict() / load_state_dict(): resuming at any position equals an uninterrupted run."""

import io
import os

import pytest
import torch
import torch.utils.data as tud

from spdl_torch import get_worker_info

# The resume logic of thread workers, at every position of many configurations (process mode's resume, which
# fast-forwards torch's own iterator: test_mode.py).
from tests._utils.loaders import ThreadLoader as DataLoader

N, BS = 11, 2  # 6 batches per epoch, the last one short
EPOCHS = 2


class Augmented(tud.Dataset):
    """Sample i: (i, a random number from the worker info's per-sample generator)."""

    def __len__(self):
        return N

    def __getitem__(self, i):
        info = get_worker_info()
        g = info.sample_generator(i) if info is not None else torch.Generator().manual_seed(1000 + i)
        return torch.tensor([float(i), torch.rand((), generator=g).item()])


def roundtrip(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def as_list(batches):
    return [b.tolist() for b in batches]


CONFIGS = {
    "seq-w0": dict(num_workers=0),
    "shuffle-gen-w0": dict(num_workers=0, shuffle=True, gen=True),
    "shuffle-gen-w2": dict(num_workers=2, shuffle=True, gen=True),
    "shuffle-global-w2": dict(num_workers=2, shuffle=True),
    "shuffle-gen-w2-persistent": dict(num_workers=2, shuffle=True, gen=True, persistent_workers=True),
    "replacement-w1": dict(num_workers=1, sampler="replacement"),
}


def make(cfg):
    cfg = dict(cfg)
    gen = torch.Generator().manual_seed(42) if cfg.pop("gen", False) else None
    sampler = cfg.pop("sampler", None)
    if sampler == "replacement":
        cfg["sampler"] = tud.RandomSampler(range(N), replacement=True, num_samples=13,
                                           generator=torch.Generator().manual_seed(9))
    return DataLoader(Augmented(), batch_size=BS, generator=gen, **cfg)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_resume_at_every_position_equals_uninterrupted(name):
    cfg = CONFIGS[name]
    torch.manual_seed(0)
    ref_loader = make(cfg)
    ref = [as_list(ref_loader) for _ in range(EPOCHS + 1)]
    assert ref[0] != ref[1] or not cfg.get("shuffle")
    for epoch in range(EPOCHS):
        for k in range(len(ref[epoch]) + 1):
            torch.manual_seed(0)
            loader = make(cfg)
            for _ in range(epoch):
                list(loader)
            it = iter(loader)
            head = [next(it).tolist() for _ in range(k)]
            state = roundtrip(loader.state_dict())
            del it, loader
            resumed = make(cfg)
            resumed.load_state_dict(state)
            rest = as_list(resumed)
            assert head + rest == ref[epoch], (epoch, k)
            assert as_list(resumed) == ref[epoch + 1], (epoch, k)  # and the following epoch too


@pytest.mark.slow  # every cut point of several epochs, each a fresh loader
def test_resume_out_of_order_returns_each_remaining_batch_once():
    ds = list(range(40))
    loader = DataLoader(ds, batch_size=2, num_workers=3, in_order=False, shuffle=True,
                        generator=torch.Generator().manual_seed(1))
    it = iter(loader)
    head = [next(it).tolist() for _ in range(7)]
    state = loader.state_dict()
    del it
    resumed = DataLoader(ds, batch_size=2, num_workers=3, in_order=False, shuffle=True,
                         generator=torch.Generator().manual_seed(1))
    resumed.load_state_dict(state)
    rest = as_list(resumed)
    assert sorted(x for b in head + rest for x in b) == ds and len(head + rest) == 20


def test_state_between_epochs_and_before_iteration():
    def mk():
        return DataLoader(list(range(9)), batch_size=4, shuffle=True, num_workers=2,
                          generator=torch.Generator().manual_seed(3))

    ref = mk()
    epochs = [as_list(ref) for _ in range(3)]
    loader = mk()
    assert loader.state_dict()["finished"]
    list(loader)
    state = roundtrip(loader.state_dict())
    resumed = mk()
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    assert [as_list(resumed) for _ in range(2)] == epochs[1:]


@pytest.mark.parametrize("kw", [dict(num_workers=0), dict(num_workers=2), dict(num_workers=2, worker_mode="process")],
                         ids=["w0", "threads", "processes"])
def test_state_after_a_break_out_of_the_loop_is_the_position_it_left(kw):
    """A ``break`` drops the loop's iterator mid-epoch: ``state_dict()`` still gives its position (as torchdata's
    ``StatefulDataLoader``, which keeps that iterator), so the usual checkpoint-after-the-loop resumes the rest of
    the epoch; the next ``iter()`` of the same loader starts the next epoch, and forgets it."""
    def mk():
        return DataLoader(list(range(14)), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(7), **kw)

    ref = mk()
    epochs = [as_list(ref) for _ in range(2)]
    loader = mk()
    seen = []
    for batch in loader:
        seen.append(batch.tolist())
        if len(seen) == 2:
            break
    state = roundtrip(loader.state_dict())
    assert not state["finished"] and state["num_yielded"] == 2
    assert loader.state_dict()["num_yielded"] == 2  # asked again: the same position
    resumed = mk()
    resumed.load_state_dict(state)
    assert seen + as_list(resumed) == epochs[0]
    assert as_list(resumed) == epochs[1]
    nxt = as_list(loader)  # the loader itself goes on with a whole next epoch ...
    assert sorted(i for b in nxt for i in b) == list(range(14)) and nxt != epochs[0]
    assert loader.state_dict()["finished"]  # ... after which nothing of the dropped one is left


class StatefulStream(tud.IterableDataset):
    """Yields 0..n-1, sharded by worker; remembers per-worker positions (state keyed by worker id)."""

    def __init__(self, n):
        self.n = n
        self.pos = {}
        self.start = {}

    def _wid(self):
        info = get_worker_info()
        return (info.id, info.num_workers) if info is not None else (0, 1)

    def __iter__(self):
        wid, nw = self._wid()
        i = self.start.pop(wid, wid)
        while i < self.n:
            self.pos[wid] = i + nw
            yield i
            i += nw

    def state_dict(self):
        wid, _ = self._wid()
        return {"pos": self.pos.get(wid)}

    def load_state_dict(self, state):
        wid, _ = self._wid()
        if state["pos"] is not None:
            self.start[wid] = state["pos"]


class PlainStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        return iter(range(wid, self.n, nw))


@pytest.mark.parametrize("num_workers", [0, 1, 2])
@pytest.mark.parametrize("cls", [StatefulStream, PlainStream])
def test_iterable_resume_at_every_position(num_workers, cls):
    ref = as_list(DataLoader(cls(13), batch_size=2, num_workers=num_workers))
    for k in range(len(ref) + 1):
        loader = DataLoader(cls(13), batch_size=2, num_workers=num_workers)
        it = iter(loader)
        head = [next(it).tolist() for _ in range(k)]
        state = roundtrip(loader.state_dict())
        del it, loader
        resumed = DataLoader(cls(13), batch_size=2, num_workers=num_workers)
        resumed.load_state_dict(state)
        assert head + as_list(resumed) == ref, k


def test_load_state_dict_rejects_foreign_state():
    with pytest.raises(ValueError, match="not a spdl_torch.DataLoader"):
        DataLoader([1]).load_state_dict({"foo": 1})


@pytest.mark.parametrize("saved_generator,loaded_generator", [(False, True), (True, False)])
def test_a_mid_epoch_state_of_another_order_source_is_refused(saved_generator, loaded_generator):
    """The order of a shuffled epoch comes from the loader's generator, or from torch's global RNG without one:
    a mid-epoch state of one resumed by the other would draw another order (repeated and missing samples)."""
    def make(generator):
        return DataLoader(range(36), batch_size=4, num_workers=2, shuffle=True,
                          generator=torch.Generator().manual_seed(5) if generator else None)

    torch.manual_seed(11)
    loader = make(saved_generator)
    it = iter(loader)
    head = [next(it).tolist() for _ in range(3)]
    state = roundtrip(loader.state_dict())
    del it
    other = make(loaded_generator)
    with pytest.raises(ValueError, match="middle of an epoch by a DataLoader with (a|no) generator.*skip or repeat"):
        other.load_state_dict(state)
    same = make(saved_generator)  # the same source resumes exactly: every sample once
    same.load_state_dict(state)
    assert sorted(sum(head, []) + [i for b in same for i in b.tolist()]) == list(range(36))
    finished = make(saved_generator)  # between epochs nothing is skipped or repeated: accepted
    list(finished)
    make(loaded_generator).load_state_dict(roundtrip(finished.state_dict()))


def test_a_mid_epoch_state_of_other_sampler_generators_is_refused():
    def make(g):
        ds = range(20)
        return DataLoader(ds, batch_size=4, num_workers=2, sampler=tud.RandomSampler(ds, generator=g))

    loader = make(torch.Generator().manual_seed(3))
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    del it
    with pytest.raises(ValueError, match="samplers had 1 generator.*this one's have 0"):
        make(None).load_state_dict(state)


def test_resume_restores_a_fused_datasets_seed(tmp_path):
    """ImageFolder(seed=None) draws its crop/flip seed from torch's global RNG: a resumed run (here a second
    dataset object, as in another process) gets the first run's seed from the loader's state."""
    import numpy as np
    from PIL import Image
    from torchvision.transforms import v2

    from spdl_torch.datasets import ImageFolder

    rng = np.random.default_rng(0)
    for c in range(2):
        os.makedirs(tmp_path / f"c{c}")
        for i in range(7):
            pixels = rng.integers(0, 256, (40 + i, 56 - i, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / f"c{c}" / f"{i}.jpg", quality=90)
    transform = v2.Compose([v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip(),
                            v2.ToDtype(torch.float32, scale=True)])

    def loader():
        ds = ImageFolder(str(tmp_path), transform=transform)  # seed=None: a new seed each time
        return ds, DataLoader(ds, batch_size=3, shuffle=True, num_workers=2,
                              generator=torch.Generator().manual_seed(5))

    ds_a, a = loader()
    rest_a = []
    for k, (x, y) in enumerate(a):
        if k == 1:
            state = roundtrip(a.state_dict())
        if k >= 2:
            rest_a.append((x, y))
    assert state["dataset_state"] == {"seed": ds_a.seed, "epoch": 0}

    ds_b, b = loader()
    assert ds_b.seed != ds_a.seed
    # seed=None: inside spdl_torch.DataLoader the crops derive from the loader's base seed (in its state), so
    # the resumed run repeats them even without the dataset's own state
    without = dict(state, dataset_state=None)
    b.load_state_dict(without)
    rest_b = list(b)
    assert len(rest_b) == len(rest_a) == 3
    for (x, y), (xa, ya) in zip(rest_b, rest_a):
        assert torch.equal(y, ya) and torch.equal(x, xa)

    ds_c, c = loader()
    c.load_state_dict(state)
    assert ds_c.seed == ds_a.seed
    rest_c = list(c)
    assert len(rest_c) == len(rest_a) == 3
    for (x, y), (xa, ya) in zip(rest_c, rest_a):
        assert torch.equal(y, ya) and torch.equal(x, xa)
