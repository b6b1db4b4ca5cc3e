"""The native thread pool survives fork(): torch.utils.data.DataLoader forks its worker processes."""

import multiprocessing
import threading

import numpy as np
import torch

import spdl_torch

from tests._utils import images


def _jpeg(seed: int) -> torch.Tensor:
    return images.encode_tensor(images.noise((40, 60, 3), seed), "JPEG")


def _decode_batch() -> torch.Tensor:
    return spdl_torch.io.decode_images([_jpeg(i) for i in range(4)], height=16, width=16).data


def _child(queue) -> None:
    queue.put(_decode_batch().sum().item())


def test_decode_images_in_a_forked_child_after_the_pool_started():
    expected = _decode_batch().sum().item()  # starts the pool's threads in this process
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0, "the forked child hung or failed decoding"
    assert queue.get(timeout=5) == expected


def _big_batch() -> list[torch.Tensor]:
    rng = np.random.default_rng(7)
    return [images.encode_tensor(images.noise((480, 640, 3), rng), "JPEG") for _ in range(16)]


def test_fork_while_threads_hold_and_wait_for_batch_turns():
    # Two threads keep decode_images calls going: at any moment one holds the pool's batch turn and the
    # other usually waits for it. A child forked meanwhile has neither thread: it must start with turns of
    # its own (a fresh pool), not wait forever for a turn that nobody in it will pass on.
    expected = _decode_batch().sum().item()
    big = _big_batch()
    stop = threading.Event()
    calls = [0, 0]

    def loop(k: int) -> None:
        while not stop.is_set():
            spdl_torch.io.decode_images(big, height=224, width=224, resize_shorter=256, dtype=torch.float32)
            calls[k] += 1

    threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(2)]
    for t in threads:
        t.start()
    try:
        while min(calls) == 0:  # both threads are in their loops
            threading.Event().wait(0.005)
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        children = [ctx.Process(target=_child, args=(queue,)) for _ in range(3)]
        for child in children:
            child.start()
            threading.Event().wait(0.02)  # fork at different points of the parent's calls
        for child in children:
            child.join(timeout=60)
            if child.is_alive():
                child.kill()
        assert [c.exitcode for c in children] == [0, 0, 0], "a forked child hung or failed decoding"
        assert [queue.get(timeout=5) for _ in children] == [expected] * 3
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)


class _Images(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return spdl_torch.io.decode_images([_jpeg(i)], height=8, width=8).data[0]


def test_torch_dataloader_workers_decode_after_the_parent_did():
    dataset = _Images()
    expected = torch.stack([dataset[i] for i in range(8)])  # the parent uses the pool first
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2, timeout=60,
                                         multiprocessing_context="fork")
    assert torch.equal(torch.cat(list(loader)), expected)
