"""The native thread pool survives fork(): torch.utils.data.DataLoader forks its worker processes."""

import io
import multiprocessing

import numpy as np
import torch
from PIL import Image

import spdl_torch


def _jpeg(seed: int) -> torch.Tensor:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (40, 60, 3), dtype=np.uint8)).save(buf, "JPEG")
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _decode_batch() -> torch.Tensor:
    return spdl_torch.io.decode_images([_jpeg(i) for i in range(4)], height=16, width=16)


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


class _Images(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return spdl_torch.io.decode_images([_jpeg(i)], height=8, width=8)[0]


def test_torch_dataloader_workers_decode_after_the_parent_did():
    dataset = _Images()
    expected = torch.stack([dataset[i] for i in range(8)])  # the parent uses the pool first
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2, timeout=60,
                                         multiprocessing_context="fork")
    assert torch.equal(torch.cat(list(loader)), expected)
