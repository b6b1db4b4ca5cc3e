"""Concurrent decode_images calls take first-come-first-served turns on the shared native pool
(csrc/core/thread_pool.h, ``BatchTurn``): a call allocates its batch only once the calls before it have
started their last samples. Results never depend on it, a failing call passes its turn on, and calls from
many threads all finish. The turn's mechanics (order, hand-over at the last claimed sample, nesting,
exceptions) are tested deterministically in csrc/tests/core_test.cc (``make test-sanitize``)."""

import gc
import threading

import pytest
import torch
from PIL import Image

from spdl_torch import DecodeError
from spdl_torch.io import batch_memory_stats, decode_images, get_num_threads, set_batch_memory_capacity, set_num_threads

from tests._utils import images

JOIN_S = 120.0  # generous: only a deadlock (a turn never passed on) reaches it
SIZE = 128  # 8 float32 images of 3x128x128: 1.5 MiB, a batch the memory pool counts (>= 1 MiB)


def jpeg(seed: int, h: int, w: int) -> torch.Tensor:
    return images.encode_tensor(images.upsampled_noise(h, w, seed, resample=Image.BILINEAR), "JPEG", quality=90)


# Batches of different contents and sizes (1: the single-sample call, which runs on the calling thread).
BATCHES = [[jpeg(100 * k + i, 150 + 17 * i, 200 - 9 * i) for i in range(n)] for k, n in enumerate([8, 1, 5, 8, 2, 8])]


def call(k: int, **kw) -> torch.Tensor:
    seeds = torch.arange(len(BATCHES[k]), dtype=torch.int64) + 1000 * k
    return decode_images(BATCHES[k], height=SIZE, width=SIZE, geometry="train", seeds=seeds, hflip_prob=0.5,
                         dtype=torch.float32, mean=[0.5], std=[0.25], **kw).data


def run_threads(targets) -> None:
    """Runs each target on its own thread; asserts that all finish (no turn left held) and none raised."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        return run

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_S)
    assert not any(t.is_alive() for t in threads), "a decode_images call never finished (a turn was not passed on?)"
    assert not errors, errors[:3]


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}threads")
def pool_threads(request):
    before = get_num_threads()
    set_num_threads(request.param)
    yield request.param
    set_num_threads(before)


def test_concurrent_calls_equal_serial_calls(pool_threads):
    serial = [call(k) for k in range(len(BATCHES))]
    got = {}

    def worker(w: int):
        def run():
            for r in range(4):
                for k in range(w, len(BATCHES), 4):
                    got[(w, r, k)] = call(k)
        return run

    run_threads([worker(w) for w in range(4)])
    assert len(got) == 4 * len(BATCHES)
    for (_, _, k), out in got.items():
        assert torch.equal(out, serial[k]), k


def test_uint8_and_channels_last_concurrent_calls_equal_serial_calls():
    def one(k):
        return decode_images(BATCHES[k], height=96, width=80, resize_shorter=100, dimension_order="NHWC").data

    serial = [one(k) for k in range(len(BATCHES))]
    got = []
    run_threads([lambda k=k: got.append((k, one(k))) for k in list(range(len(BATCHES))) * 3])
    assert len(got) == 3 * len(BATCHES)
    assert all(torch.equal(out, serial[k]) for k, out in got)


def _truncated(data: torch.Tensor) -> torch.Tensor:
    return data[: data.numel() // 2].clone()


def test_failing_calls_pass_the_turn_on(pool_threads):
    bad_first = [_truncated(BATCHES[0][0])] + BATCHES[0][1:]  # fails in its first sample
    bad_last = BATCHES[0][:-1] + [_truncated(BATCHES[0][-1])]
    expected = call(3)
    lenient_ok = [True] * 7 + [False]

    def worker():
        for _ in range(5):
            for data, sample in ((bad_first, 0), (bad_last, 7), ([_truncated(BATCHES[1][0])], 0)):
                with pytest.raises(DecodeError, match=rf"^sample {sample}: JPEG: "):
                    decode_images(data, height=SIZE, width=SIZE, dtype=torch.float32)
            result = decode_images(bad_last, height=SIZE, width=SIZE, dtype=torch.float32, strict=False)
            out, ok = result.data, result.ok
            assert ok.tolist() == lenient_ok and out[7].eq(0).all()
            with pytest.raises(ValueError, match="seeds"):  # refused before taking a turn
                decode_images(BATCHES[0], height=SIZE, width=SIZE, geometry="train")
            assert torch.equal(call(3), expected)

    run_threads([worker for _ in range(3)])
    got = []
    run_threads([lambda: got.append(call(3))])  # and the next call, alone, still gets its turn
    assert torch.equal(got[0], expected)


@pytest.fixture
def pooled():
    """The batch memory pool keeps freed buffers (as by default), restored after the test."""
    old = batch_memory_stats()["capacity"]
    set_batch_memory_capacity(8 * (8 * 3 * SIZE * SIZE * 4 + 4096))
    gc.collect()
    yield
    set_batch_memory_capacity(0)
    set_batch_memory_capacity(old)


def test_two_threads_never_have_more_than_two_batches_alive(pooled):
    # Each thread frees its batch before its next call, so two threads can never hold more than two
    # batches between them; a call that allocated before its turn and again after (or leaked) would.
    gc.collect()
    base = batch_memory_stats()
    batch_memory_stats(reset_peak=True)

    def worker():
        for _ in range(30):
            out = call(0)
            assert out.shape == (8, 3, SIZE, SIZE)
            del out

    run_threads([worker, worker])
    s = batch_memory_stats()
    assert s["peak_live_buffers"] - base["live_buffers"] <= 2, (base, s)
    assert s["live_buffers"] == base["live_buffers"]
