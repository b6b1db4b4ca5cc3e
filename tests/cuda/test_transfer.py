"""The transfer stage's bookkeeping with a fake CUDA backend (tests/_utils/fake_cuda.py): copies on the side
stream, one event per batch, the consumer waiting for its own batch's event only, record_stream of every device
tensor on the consumer's stream, the depth of batches in flight, and the loader's device path end to end. On a
CUDA device (tests marked ``cuda``): the copy overlaps a kernel of the consumer's stream, and batches stay
valid under the caching allocator."""

import pytest
import torch
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import cuda
from spdl_torch.cuda import _transfer
from spdl_torch.dataloader._finish import DeviceFinish, mark_finish, pending_finish

from tests._utils.fake_cuda import FakeBackend, fake_pinning
from tests._utils.images import IMAGENET_MEAN, IMAGENET_STD


def _batches(n, log=None):
    for k in range(n):
        if log is not None:
            log.append(("produce", k))
        yield [torch.full((2, 3), k, dtype=torch.uint8), torch.tensor([k, k])]


def test_each_batch_is_copied_on_the_side_stream_and_waited_for_alone():
    backend = FakeBackend()
    out = list(cuda.to_device(_batches(4), "cuda", depth=2, backend=backend))
    assert [int(b[0][0, 0]) for b in out] == [0, 1, 2, 3]
    assert all(stream == "side0" for _, stream in backend.copies) and len(backend.copies) == 8
    assert len(backend.streams) == 1  # one dedicated stream
    records = [e for e in backend.log if e[0] == "record"]
    waits = [e for e in backend.log if e[0] == "wait"]
    assert [r[2] for r in records] == ["side0"] * 4
    # the consumer waits for each batch's own event, in order, once; never for the whole side stream
    assert [w[1] for w in waits] == [r[1] for r in records] and all(w[2] == "consumer" for w in waits)
    assert not [e for e in backend.log if e[0] == "wait_stream"]
    # every device tensor is record_stream-ed on the consumer's stream before it is handed out
    assert len(backend.recorded) == 8 and {s for _, s in backend.recorded} == {"consumer"}
    handed = [t for b in out for t in b]
    assert all(any(t is r for r, _ in backend.recorded) for t in handed)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_depth_batches_are_in_flight(depth):
    backend = FakeBackend()
    log = backend.log
    got = []
    for k, _ in enumerate(cuda.to_device(_batches(6, log), "cuda", depth=depth, backend=backend)):
        submitted = sum(1 for e in log if e[0] == "record")
        taken = sum(1 for e in log if e[0] == "wait")
        got.append(submitted - taken)
        assert submitted == min(6, k + depth)
    assert got[:6 - depth + 1] == [depth - 1] * (6 - depth + 1)


def test_an_error_comes_after_the_batches_before_it():
    def source():
        yield from _batches(2)
        raise KeyError("bad shard")

    it = cuda.to_device(source(), "cuda", depth=3, backend=FakeBackend())
    assert int(next(it)[0][0, 0]) == 0 and int(next(it)[0][0, 0]) == 1
    with pytest.raises(KeyError, match="bad shard"):
        next(it)


def test_non_tensors_pass_through_and_the_finish_runs_on_the_side_stream():
    backend = FakeBackend()
    transfer = cuda.DeviceTransfer("cuda", 1, backend=backend, after_copy=pending_finish)
    x = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    finish = DeviceFinish(dtype=torch.float32, mean=(0.5,) * 3, std=(0.25,) * 3)
    mark_finish(x, finish)
    transfer.submit({"image": x, "name": "a", "n": 3})
    out = transfer.take()
    assert out["name"] == "a" and out["n"] == 3
    assert torch.equal(out["image"], v2.Normalize((0.5,) * 3, (0.25,) * 3)(v2.ToDtype(torch.float32, scale=True)(x)))
    assert backend.copies[0][0] is x and backend.copies[0][1] == "side0"  # uint8 crosses, float is made after
    assert backend.recorded[0][0] is out["image"]


@pytest.fixture
def fake_cuda(monkeypatch):
    """DataLoader(device="cuda") on this machine: check_cuda passes, the default backend is the fake."""
    backends = []

    def make(device):
        b = FakeBackend(device)
        backends.append(b)
        return b

    monkeypatch.setattr(spdl_torch._build_info, "check_cuda", lambda *a, **k: None)
    monkeypatch.setattr(_transfer, "check_cuda", lambda *a, **k: None)
    monkeypatch.setattr(_transfer, "CudaBackend", make)
    return backends


def _folder(image_folder, tmp_path, n=12):
    from tests._utils import images

    image_folder(["a", "b"], n // 2, lambda rng, c, k: images.upsampled_noise(30 + k, 40, seed=rng), quality=95)
    return tmp_path


def test_pin_memory_pins_a_fused_batch_once_in_the_op(monkeypatch, image_folder, tmp_path):
    root = _folder(image_folder, tmp_path)
    op_calls, pin_calls = fake_pinning(monkeypatch)
    ds = spdl_torch.datasets.ImageFolder(str(root), transform=v2.Compose([v2.Resize(16), v2.CenterCrop(16)]))
    loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True)
    batches = list(loader)
    assert len(batches) == 3 and op_calls and all(c["pin_memory"] for c in op_calls)
    images_pinned_again = [t for t in pin_calls if t.dim() == 4]
    assert images_pinned_again == []  # the batch the consumer gets is the op's own storage
    assert all(b[0].is_pinned() for b in batches)
    # the targets (collated by default_collate) are pinned by the loader, once each
    assert sum(1 for t in pin_calls if t.dim() == 1) == 3


def test_pin_memory_still_pins_batches_the_op_did_not_make(monkeypatch):
    _, pin_calls = fake_pinning(monkeypatch)
    data = [torch.full((3, 4, 4), k, dtype=torch.uint8) for k in range(8)]
    batches = list(spdl_torch.DataLoader(data, batch_size=4, num_workers=1, pin_memory=True, worker_mode="thread"))
    assert len(pin_calls) == 2 and all(b.is_pinned() for b in batches)
    assert [p.data_ptr() for p in pin_calls] != [b.data_ptr() for b in batches]  # a copy, once


def test_loader_device_cuda_copies_uint8_and_normalises_after(monkeypatch, fake_cuda, image_folder, tmp_path):
    root = _folder(image_folder, tmp_path)
    op_calls, pin_calls = fake_pinning(monkeypatch)
    t = v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    ds = spdl_torch.datasets.ImageFolder(str(root), transform=t, seed=5)
    loader = spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, device="cuda", transfer_depth=2)
    out = list(loader)
    backend = fake_cuda[0]
    assert len(out) == 3 and all(b[0].dtype == torch.float32 for b in out)
    # the op decoded uint8 into pinned memory; nothing pinned it again; uint8 crossed "PCIe"
    assert all(c["pin_memory"] and c.get("dtype", torch.uint8) == torch.uint8 and c.get("mean") is None
               for c in op_calls)
    assert [t for t in pin_calls if t.dim() == 4] == []
    assert [c[0].dtype for c in backend.copies if c[0].dim() == 4] == [torch.uint8] * 3
    # the same values as the loader without a device, whose fused op normalises on the CPU: within a level
    ref = list(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2))
    for (x, y), (rx, ry) in zip(out, ref):
        assert torch.equal(y, ry)
        assert (x - rx).abs().max().item() <= 1.0 / 255 / 0.224 + 1e-5
    waits = [e for e in backend.log if e[0] == "wait"]
    assert len(waits) == 3 and len({w[1] for w in waits}) == 3


def test_loader_device_keeps_a_failures_place_and_the_resume_position(monkeypatch, fake_cuda):
    class Flaky(torch.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise ValueError("sample 5 is bad")
            return torch.full((2,), i)

    fake_pinning(monkeypatch)
    loader = spdl_torch.DataLoader(Flaky(), batch_size=2, num_workers=2, device="cuda", transfer_depth=3,
                                   worker_mode="thread")
    it = iter(loader)
    assert next(it)[0].tolist() == [0, 0] and next(it)[0].tolist() == [2, 2]
    assert loader.state_dict()["num_yielded"] == 2  # batches in flight are not yielded yet
    with pytest.raises(ValueError, match="sample 5 is bad"):
        next(it)
    assert next(it)[0].tolist() == [6, 6]
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.cuda
def test_the_copy_overlaps_a_long_kernel_on_the_consumer_stream():
    host = torch.empty((64, 3, 224, 224), dtype=torch.uint8).pin_memory()
    transfer = cuda.DeviceTransfer("cuda", depth=1)
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # about a second of spinning on the current stream
    busy = torch.cuda.Event()
    busy.record()
    item = transfer.submit(host)
    item.event.synchronize()  # the copy is done ...
    assert not busy.query(), "the copy waited for the consumer stream's kernel"  # ... while the kernel still runs
    out = transfer.take()
    torch.cuda.synchronize()
    assert out.is_cuda and out.shape == host.shape


@pytest.mark.cuda
def test_transferred_batches_stay_valid_under_the_caching_allocator():
    transfer_in = [torch.full((4, 3, 64, 64), k, dtype=torch.uint8).pin_memory() for k in range(16)]
    sums = []
    for out in cuda.to_device(iter(transfer_in), "cuda", depth=3):
        torch.cuda._sleep(1_000_000)
        scratch = torch.empty_like(out).fill_(255)  # would reuse a block freed too early
        sums.append(out.float().mean().item())
        del scratch
    assert sums == [float(k) for k in range(16)]
