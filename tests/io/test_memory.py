"""The memory of decode_images' non-pinned batches (csrc/ops/batch_memory.cpp): buffers recycled up to the
pool's capacity and unmapped past it, tensors valid however long they live, thread safety, and resident
memory that stays bounded over many batches."""

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from PIL import Image

import spdl_torch
from spdl_torch.datasets import FileListDataset
from spdl_torch.io import batch_memory_stats, decode_images, set_batch_memory_capacity
from torchvision.transforms import v2

from tests._utils import images

MIB = 2**20
SIZE = 128  # 8 float32 images of 3x128x128: a 1.5 MiB batch, above the pool's 1 MiB threshold
PAGE = os.sysconf("SC_PAGE_SIZE")


def jpeg(seed: int, h: int = 96, w: int = 120) -> torch.Tensor:
    return images.encode_tensor(images.upsampled_noise(h, w, seed, resample=Image.BILINEAR), "JPEG", quality=90)


DATAS = [jpeg(i) for i in range(8)]


def batch(n: int = 8, size: int = SIZE, **kw) -> torch.Tensor:
    return decode_images(DATAS[:n], height=size, width=size, resize_shorter=size, dtype=torch.float32, **kw).data


def mapped_bytes(n: int = 8, size: int = SIZE) -> int:
    nbytes = n * 3 * size * size * 4
    return (nbytes + PAGE - 1) // PAGE * PAGE


@pytest.fixture
def capacity():
    """Restores the pool's capacity after the test (emptying the pool first)."""
    old = batch_memory_stats()["capacity"]
    set_batch_memory_capacity(0)
    gc.collect()
    yield set_batch_memory_capacity
    set_batch_memory_capacity(0)
    set_batch_memory_capacity(old)


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in ("maps", "reuses", "unmaps")}


def test_freed_buffer_is_reused_up_to_the_capacity(capacity):
    capacity(2 * mapped_bytes())
    reference = batch()
    s0 = batch_memory_stats()
    assert s0["live_buffers"] >= 1 and s0["pooled_buffers"] == 0
    b = batch()
    ptr = b.data_ptr()
    del b
    assert batch_memory_stats()["pooled_buffers"] == 1
    b = batch()
    assert b.data_ptr() == ptr  # the same buffer, refilled
    assert torch.equal(b, reference)
    assert delta(s0, batch_memory_stats()) == {"maps": 1, "reuses": 1, "unmaps": 0}

    # three alive, then freed: the pool keeps two, the third goes back to the OS
    s1 = batch_memory_stats()
    bs = [b, batch(), batch()]
    del b
    bs.clear()
    s2 = batch_memory_stats()
    assert s2["pooled_buffers"] == 2 and s2["pooled_bytes"] == 2 * mapped_bytes()
    assert s2["live_buffers"] == s1["live_buffers"] - 1
    assert delta(s1, s2)["unmaps"] == 1

    capacity(mapped_bytes())  # lowering the capacity unmaps the excess at once
    assert batch_memory_stats()["pooled_buffers"] == 1
    capacity(0)
    s3 = batch_memory_stats()
    assert s3["pooled_buffers"] == 0 and s3["pooled_bytes"] == 0
    assert delta(s2, s3)["unmaps"] == 2


def test_capacity_zero_maps_every_batch(capacity):
    s0 = batch_memory_stats()
    for _ in range(3):
        b = batch()
        del b
    s1 = batch_memory_stats()
    assert delta(s0, s1) == {"maps": 3, "reuses": 0, "unmaps": 3}
    assert s1["pooled_buffers"] == 0 and s1["live_bytes"] == s0["live_bytes"]


def test_other_size_evicts_the_least_recently_freed(capacity):
    capacity(mapped_bytes())
    del_me = batch()
    del del_me
    s0 = batch_memory_stats()
    assert s0["pooled_bytes"] == mapped_bytes()
    other = batch(size=SIZE + 32)  # no buffer of this size: the pooled one makes room
    s1 = batch_memory_stats()
    assert delta(s0, s1) == {"maps": 1, "reuses": 0, "unmaps": 1}
    del other
    s2 = batch_memory_stats()  # too big for the capacity: unmapped at once
    assert s2["pooled_buffers"] == 0 and delta(s1, s2)["unmaps"] == 1


def test_peak_live_counters_and_their_reset(capacity):
    capacity(2 * mapped_bytes())
    gc.collect()
    s0 = batch_memory_stats()
    batch_memory_stats(reset_peak=True)
    assert batch_memory_stats()["peak_live_buffers"] == s0["live_buffers"]
    kept = [batch() for _ in range(3)]
    s1 = batch_memory_stats()
    assert s1["peak_live_buffers"] == s0["live_buffers"] + 3
    assert s1["peak_live_bytes"] == s0["live_bytes"] + 3 * mapped_bytes()
    kept.clear()
    s2 = batch_memory_stats()
    assert s2["live_buffers"] == s0["live_buffers"] and s2["peak_live_buffers"] == s1["peak_live_buffers"]
    one = batch()  # served from the pool: counted live, the peak stays
    assert batch_memory_stats()["peak_live_buffers"] == s1["peak_live_buffers"]
    batch_memory_stats(reset_peak=True)
    s3 = batch_memory_stats()
    assert s3["peak_live_buffers"] == s0["live_buffers"] + 1 and s3["peak_live_bytes"] == s0["live_bytes"] + mapped_bytes()
    del one


def test_small_batches_use_torchs_allocator(capacity):
    s0 = batch_memory_stats()
    b = batch(n=1, size=64)  # 48 KiB
    assert batch_memory_stats() == s0
    assert b.shape == (1, 3, 64, 64)


def test_recycled_buffer_holds_no_stale_pixels(capacity):
    capacity(2 * mapped_bytes())
    b = batch()
    b.fill_(255.0)
    ptr = b.data_ptr()
    del b
    datas = list(DATAS[:7]) + [torch.tensor([0xFF, 0xD8, 0, 1, 2], dtype=torch.uint8)]  # a corrupt last one
    result = decode_images(datas, height=SIZE, width=SIZE, resize_shorter=SIZE, dtype=torch.float32,
                            strict=False)
    out, ok = result.data, result.ok
    assert out.data_ptr() == ptr
    assert ok.tolist() == [True] * 7 + [False]
    assert torch.equal(out[7], torch.zeros_like(out[7]))
    assert torch.equal(out[:7], batch(n=7))


@pytest.mark.parametrize("channels_last", [False, True])
def test_layout_dtype_and_storage_behave_like_at_empty(capacity, channels_last):
    b = batch(dimension_order="NHWC") if channels_last else batch()
    b = b.permute(0, 3, 1, 2) if channels_last else b  # NHWC rows: the NCHW batch in channels_last format
    assert b.device.type == "cpu" and not b.is_pinned() and b.dtype == torch.float32
    assert b.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    assert b.untyped_storage().nbytes() == 8 * 3 * SIZE * SIZE * 4
    b.untyped_storage().resize_(b.untyped_storage().nbytes() * 2)  # resizable like any CPU storage
    assert b.untyped_storage().nbytes() == 2 * 8 * 3 * SIZE * SIZE * 4


def test_concurrent_allocation_from_threads(capacity):
    capacity(3 * mapped_bytes())
    reference = batch()
    s0 = batch_memory_stats()
    errors = []

    def work(k):
        try:
            kept = []
            for i in range(40):
                b = batch()
                if not torch.equal(b, reference):
                    errors.append(f"thread {k} batch {i} differs")
                kept.append(b)
                if len(kept) > 1 + k % 3:  # threads hold 2..4 batches: frees interleave with allocations
                    kept.pop(0)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    s1 = batch_memory_stats()
    d = delta(s0, s1)
    assert d["maps"] + d["reuses"] == 6 * 40
    assert s1["live_buffers"] == s0["live_buffers"] and s1["live_bytes"] == s0["live_bytes"]
    assert s1["pooled_bytes"] <= 3 * mapped_bytes()
    assert d["maps"] - d["unmaps"] == s1["pooled_buffers"] - s0["pooled_buffers"]


def _write_jpegs(root: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        p = root / f"{i:04d}.jpg"
        p.write_bytes(bytes(jpeg(i).numpy()))
        paths.append(str(p))
    return paths


def _transform():
    return v2.Compose([v2.Resize(SIZE), v2.CenterCrop(SIZE), v2.ToDtype(torch.float32, scale=True)])


@pytest.mark.parametrize("cap_batches", [0, 2])
def test_batches_outlive_the_loader_and_the_pool(tmp_path, capacity, cap_batches):
    capacity(cap_batches * mapped_bytes())
    ds = FileListDataset(_write_jpegs(tmp_path, 32), transform=_transform())
    reference = [ds.__getitems__(list(range(i, i + 8))) for i in range(0, 32, 8)]
    reference = [torch.stack([img for img, _ in items]) for items in reference]
    loader = spdl_torch.DataLoader(ds, batch_size=8, num_workers=2)
    kept = [x for x, _ in loader]
    del loader
    capacity(0)  # empties the pool
    gc.collect()
    assert len(kept) == 4
    for got, want in zip(kept, reference):
        assert torch.equal(got, want)


@pytest.mark.slow
def test_batch_alive_at_interpreter_exit_is_harmless(tmp_path):
    script = tmp_path / "keep.py"
    script.write_text(
        "import torch, spdl_torch\n"
        "from spdl_torch.io import decode_images, set_batch_memory_capacity\n"
        f"data = [torch.frombuffer(bytearray({bytes(jpeg(0).numpy())!r}), dtype=torch.uint8)] * 8\n"
        "set_batch_memory_capacity(1 << 24)\n"
        f"kept = decode_images(data, height={SIZE}, width={SIZE}, dtype=torch.float32).data\n"
        f"freed = decode_images(data, height={SIZE}, width={SIZE}, dtype=torch.float32).data\n"
        "del freed  # one pooled, one alive at exit\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(spdl_torch.__file__).parent.parent))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stderr == "" and r.stdout == "", (r.returncode, r.stderr)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
@pytest.mark.parametrize("cap_batches", [0, 2])
def test_rss_stays_bounded_over_hundreds_of_batches(tmp_path, capacity, cap_batches):
    capacity(cap_batches * mapped_bytes())
    ds = FileListDataset(_write_jpegs(tmp_path, 64), transform=_transform())
    sampler = [i % 64 for i in range(8 * 300)]
    loader = spdl_torch.DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    rss = []
    kept = []
    for i, (x, _) in enumerate(loader):
        kept.append(x)  # the consumer holds a few batches, as a training step might
        if len(kept) > 3:
            kept.pop(0)
        if i >= 50:  # after warm-up: thread pool, decoder state, allocator arenas
            rss.append(_rss())
    assert len(rss) == 250
    kept.clear()
    s = batch_memory_stats()
    assert s["pooled_bytes"] <= cap_batches * mapped_bytes()
    # alive at most: 3 kept + 4 prefetched + 2 being decoded; RSS may move by those and noise, but a leak
    # of one 1.5 MiB batch per step would add ~370 MiB
    growth = max(rss) - rss[0]
    assert growth < 12 * mapped_bytes() + 16 * MIB, (growth / MIB, s)


def test_capacity_argument_errors():
    with pytest.raises(ValueError, match="nbytes=-1 must be an int >= 0"):
        set_batch_memory_capacity(-1)
    with pytest.raises(ValueError, match="must be an int >= 0"):
        set_batch_memory_capacity(1.5)
    with pytest.raises(ValueError, match="set_batch_memory_capacity: expected bytes >= 0, got -5"):
        torch.ops.spdl_torch.set_batch_memory_capacity(-5)
