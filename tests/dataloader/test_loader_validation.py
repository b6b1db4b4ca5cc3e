"""The DataLoader's argument checks (spdl_torch/dataloader/_loader.py): every bad constructor argument fails as
in torch (same exception type and message, table-driven), torch's excessive-``num_workers`` warning,
``timeout`` with ``num_workers=0``, ``on_error="skip"`` rejected where it cannot apply, ``load_state_dict``
refusing a foreign state, and batched fetches (``__getitems__``) through ``Subset`` and ``ConcatDataset``."""

import re
import warnings

import pytest
import torch
import torch.utils.data as tud

from tests._utils.loaders import OURS, TORCH, Counting, both, ints


class CountingIterable(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


MAP = Counting(20)
ITER = CountingIterable(20)
_SEQ = tud.SequentialSampler(MAP)
_BATCHES = tud.BatchSampler(_SEQ, 3, False)
_START = torch.multiprocessing.get_all_start_methods()[-1]

# (id, dataset, kwargs): each must raise in torch's constructor; ours must raise the same type and message.
BAD_ARGS = [
    ("num_workers<0", MAP, dict(num_workers=-1)),
    ("num_workers=str", MAP, dict(num_workers="2")),
    ("timeout<0", MAP, dict(timeout=-1)),
    ("timeout=str", MAP, dict(timeout="1")),
    ("prefetch_factor-without-workers", MAP, dict(prefetch_factor=2)),
    ("prefetch_factor<0", MAP, dict(num_workers=2, prefetch_factor=-1)),
    ("prefetch_factor=str", MAP, dict(num_workers=2, prefetch_factor="2")),
    ("persistent-without-workers", MAP, dict(persistent_workers=True)),
    ("batch_size=None+drop_last", MAP, dict(batch_size=None, drop_last=True)),
    ("batch_size=0", MAP, dict(batch_size=0)),
    ("batch_size<0", MAP, dict(batch_size=-2)),
    ("batch_size=float", MAP, dict(batch_size=2.0)),
    ("batch_size=bool", MAP, dict(batch_size=True)),
    ("drop_last=int", MAP, dict(batch_size=2, drop_last=1)),
    ("sampler+shuffle", MAP, dict(batch_size=11, sampler=_SEQ, shuffle=True)),
    ("batch_sampler+sampler+shuffle", MAP, dict(batch_sampler=_BATCHES, sampler=_SEQ, shuffle=True)),
    ("batch_sampler+sampler+shuffle=3", MAP, dict(batch_sampler=_BATCHES, sampler=_SEQ, shuffle=3)),
    ("batch_sampler+batch_size", MAP, dict(batch_size=11, batch_sampler=_BATCHES)),
    ("batch_sampler+shuffle", MAP, dict(shuffle=True, batch_sampler=_BATCHES)),
    ("batch_sampler+drop_last", MAP, dict(drop_last=True, batch_sampler=_BATCHES)),
    ("batch_sampler+drop_last=3", MAP, dict(drop_last=3, batch_sampler=_BATCHES)),
    ("batch_sampler+sampler", MAP, dict(batch_sampler=_BATCHES, sampler=_SEQ)),
    ("iterable+shuffle", ITER, dict(shuffle=True)),
    ("iterable+shuffle=3", ITER, dict(shuffle=3)),
    ("iterable+sampler", ITER, dict(sampler=tud.SequentialSampler(range(3)))),
    ("iterable+sampler=3", ITER, dict(sampler=3)),
    ("iterable+batch_sampler", ITER, dict(batch_sampler=tud.BatchSampler(tud.SequentialSampler(range(3)), 3, False))),
    ("iterable+batch_sampler=3", ITER, dict(batch_sampler=3)),
    ("mp_context-without-workers", MAP, dict(multiprocessing_context=_START)),
    ("mp_context=bad-name", MAP, dict(num_workers=1, multiprocessing_context="bad")),
    ("mp_context=object", MAP, dict(num_workers=1, multiprocessing_context=object())),
    ("unknown-keyword", MAP, dict(batchsize=2)),
    ("too-many-positional", MAP, ("POSITIONAL", (1, None, None, None, 0, None, False, False, 0, None, None, None, 2))),
]


def _construct(DL, dataset, kwargs):
    if isinstance(kwargs, tuple) and kwargs[0] == "POSITIONAL":
        return DL(dataset, *kwargs[1])
    return DL(dataset, **kwargs)


def _error(DL, dataset, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. our "multiprocessing_context is ignored" warning
        try:
            _construct(DL, dataset, kwargs)
        except Exception as e:  # noqa: BLE001 - what is compared is the exception itself
            msg = str(e).replace(DL.__qualname__, "DataLoader")
            return type(e), re.sub(r" at 0x[0-9a-f]+", " at 0x...", msg)
    return None


@pytest.mark.parametrize("case", BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_bad_constructor_arguments_fail_as_in_torch(case):
    _, dataset, kwargs = case
    expected = _error(TORCH, dataset, kwargs)
    assert expected is not None, "torch accepts this: not a bad-argument case"
    assert _error(OURS, dataset, kwargs) == expected


@both()
@pytest.mark.parametrize("attr", ["batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                  "persistent_workers"])
def test_frozen_attributes_after_init(DL, attr):
    loader = DL(MAP, batch_size=2)
    with pytest.raises(ValueError, match=f"^{attr} attribute should not be set after DataLoader is initialized$"):
        setattr(loader, attr, {})


@both()
@pytest.mark.parametrize("attr", ["num_workers", "collate_fn", "timeout", "worker_init_fn", "pin_memory"])
def test_other_attributes_stay_settable(DL, attr):
    loader = DL(MAP, batch_size=2)
    value = getattr(loader, attr)
    setattr(loader, attr, value)
    assert getattr(loader, attr) is value


# -- timeout / prefetch_factor at iteration time ------------------------------------------------------------


@both()
def test_timeout_without_workers_fails_at_iter(DL):
    loader = DL(MAP, batch_size=2, timeout=1.0)  # the constructor accepts it ...
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(loader)  # ... the iterator does not


# -- excessive num_workers warning ----------------------------------------------------------------------------

_EXCESSIVE = (r"This DataLoader will create (\d+) worker (processes|threads) in total\. Our suggested max number of "
              r"worker in current system is (\d+), which is smaller than what this DataLoader is going to create\.")


@both()
def test_excessive_num_workers_warns_at_construction(DL):
    cpus = torch._utils.cpu_count()
    with pytest.warns(UserWarning, match=_EXCESSIVE) as record:
        DL(MAP, num_workers=cpus + 1)
    m = next(re.search(_EXCESSIVE, str(w.message)) for w in record if re.search(_EXCESSIVE, str(w.message)))
    assert (int(m.group(1)), int(m.group(3))) == (cpus + 1, cpus)


@both()
def test_no_excessive_warning_within_the_cpu_count(DL):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DL(MAP, num_workers=torch._utils.cpu_count())
        DL(MAP, num_workers=0)


# -- on_error="skip" where it cannot apply ------------------------------------------------------------------


def test_on_error_skip_rejected_for_iterable_dataset():
    with pytest.raises(ValueError, match="on_error"):
        OURS(ITER, batch_size=2, on_error="skip")


def test_on_error_skip_rejected_without_batching():
    with pytest.raises(ValueError, match="on_error"):
        OURS(MAP, batch_size=None, on_error="skip")


def test_on_error_skip_still_accepted_for_batched_map_style():
    assert OURS(MAP, batch_size=2, on_error="skip").on_error == "skip"


# -- load_state_dict refuses a state of another loader ---------------------------------------------------------


def _mid_epoch_state(**kwargs):
    loader = OURS(kwargs.pop("dataset", Counting(100)), **kwargs)
    it = iter(loader)
    next(it)
    next(it)
    return loader.state_dict()


def test_load_state_dict_same_arguments_resumes():
    state = _mid_epoch_state(batch_size=10)
    loader = OURS(Counting(100), batch_size=10)
    loader.load_state_dict(state)
    assert ints(loader) == list(range(20, 100))


@pytest.mark.parametrize("other", [
    dict(batch_size=25),  # a bs=10 state in a bs=25 loader: resuming it would skip 45 samples
    dict(batch_size=10, dataset=Counting(90)),
    dict(batch_size=10, shuffle=True),
], ids=["batch_size", "dataset_length", "sampler_type"])
def test_load_state_dict_refuses_a_state_of_another_loader(other):
    state = _mid_epoch_state(batch_size=10)
    loader = OURS(other.pop("dataset", Counting(100)), **other)
    with pytest.raises(ValueError, match="state"):
        loader.load_state_dict(state)


# -- batched fetches through Subset / ConcatDataset -----------------------------------------------------------


class BatchCounting(tud.Dataset):
    """``ds[i] == offset + i``; counts ``__getitem__`` and ``__getitems__`` calls."""

    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset
        self.single_calls = self.batch_calls = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.single_calls += 1
        return self.offset + i

    def __getitems__(self, indices):
        self.batch_calls += 1
        return [self.offset + i for i in indices]


@both()
def test_getitems_through_subset(DL):
    base = BatchCounting(20)
    got = ints(DL(tud.Subset(base, list(range(0, 20, 2))), batch_size=5))
    assert got == list(range(0, 20, 2))
    assert (base.batch_calls, base.single_calls) == (2, 0)  # torch's Subset forwards __getitems__


@both(torch_skip="torch fetches ConcatDataset samples one by one (no __getitems__): a batched fetch is ours")
def test_getitems_through_concat_dataset(DL):
    a, b = BatchCounting(6), BatchCounting(6, offset=100)
    got = ints(DL(tud.ConcatDataset([a, b]), batch_size=4))
    assert got == list(range(6)) + list(range(100, 106))
    assert a.single_calls == b.single_calls == 0
    assert (a.batch_calls, b.batch_calls) == (2, 2)  # batches [0-3], [4,5 | 100,101], [102-105]


def test_concat_dataset_values_match_torch():
    a, b = BatchCounting(6), BatchCounting(6, offset=100)
    ds = tud.ConcatDataset([a, b])
    assert ints(OURS(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1))) == ints(
        TORCH(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1)))
