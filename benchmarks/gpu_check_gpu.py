"""The device check's GPU parts (benchmarks/gpu_check.sh; each returns a dict for the report): H2D bandwidth,
copy/compute overlap, ResNet-50 training fed three ways, nvJPEG against the CPU path, and torchvision's batched
GPU decode as the peer. Time with CUDA events after warm-up; medians."""

from __future__ import annotations

import statistics
import time

import torch

from .contenders import MEAN, RATIO, SCALE, SIZE, STD, PilDataset, list_images

__all__ = ["h2d", "nvjpeg", "overlap", "torchvision_gpu", "train"]


def _events_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def h2d(batch: int = 256) -> dict:
    """GB/s of one batch's host-to-device copy: pinned vs pageable, uint8 and float32 batches."""
    out = {}
    for dtype in (torch.uint8, torch.float32):
        src = torch.randint(0, 255, (batch, 3, SIZE, SIZE), dtype=torch.uint8).to(dtype)
        pinned = src.pin_memory()
        dst = torch.empty_like(src, device="cuda")
        nbytes = src.numel() * src.element_size()
        for name, host in (("pinned", pinned), ("pageable", src)):
            dst.copy_(host, non_blocking=True)
            ms = _events_ms(lambda h=host: dst.copy_(h, non_blocking=True), 20)
            out[f"{name}_{str(dtype).split('.')[1]}_gbps"] = nbytes / ms / 1e6
        out[f"{str(dtype).split('.')[1]}_batch_mb"] = nbytes / 2**20
    return out


def _model():
    import torchvision

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def overlap(batch: int = 256, steps: int = 20) -> dict:
    """Model step time alone and with a concurrent uint8 batch copy on the transfer's side stream."""
    from spdl_torch.cuda import DeviceTransfer

    step = _model()
    x = torch.randn(batch, 3, SIZE, SIZE, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    host = torch.randint(0, 255, (batch, 3, SIZE, SIZE), dtype=torch.uint8).pin_memory()
    transfer = DeviceTransfer("cuda", depth=2)
    for _ in range(3):
        step(x, y)
    alone = _events_ms(lambda: step(x, y), steps)

    def with_copy():
        transfer.submit(host)
        step(x, y)
        transfer.take()

    with_copy()
    both = _events_ms(with_copy, steps)
    return {"step_ms": alone, "step_with_copy_ms": both, "slowdown": both / alone}


def _fused_loader(root: str, batch: int, workers: int):
    import spdl_torch
    from torchvision.transforms import v2

    t = v2.Compose([v2.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, antialias=True), v2.RandomHorizontalFlip(),
                    v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    paths, labels, _ = list_images(root)
    ds = spdl_torch.datasets.FileListDataset(paths, labels, transform=t, seed=0)
    return spdl_torch.DataLoader(ds, batch_size=batch, num_workers=workers, device="cuda", drop_last=True,
                                 persistent_workers=True, shuffle=True)


def _torch_loader(root: str, batch: int, workers: int):
    paths, labels, _ = list_images(root)
    return torch.utils.data.DataLoader(PilDataset(paths, labels, "train"), batch_size=batch, num_workers=workers,
                                       pin_memory=True, drop_last=True, persistent_workers=True, shuffle=True)


def _train_from(loader, step, steps: int, to_device: bool) -> dict:
    done, start, wall, first = 0, None, 0.0, None
    t_iter = time.perf_counter()
    while done < steps + 3:
        for x, y in loader:
            if to_device:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            if first is None:  # the first batch on the GPU, from iter() (workers started there)
                torch.cuda.synchronize()
                first = time.perf_counter() - t_iter
            x = x.contiguous(memory_format=torch.channels_last)
            step(x, y.cuda())
            done += 1
            if done == 3:  # after warm-up
                torch.cuda.synchronize()
                start = time.perf_counter()
            if done >= steps + 3:
                break
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    return {"steps": steps, "wall_s": wall, "steps_per_s": steps / wall, "first_batch_s": first}


def train(root: str, batch: int = 256, steps: int = 30, workers: int = 16) -> dict:
    """ResNet-50 (random weights, bf16 autocast, channels-last) at ``batch``: fed by spdl_torch, by one batch
    already on the GPU (the dummy ceiling), and by torch's DataLoader with ``workers`` processes."""
    step = _model()
    x = torch.randn(batch, 3, SIZE, SIZE, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    for _ in range(3):
        step(x, y)
    ceiling_ms = _events_ms(lambda: step(x, y), steps)
    out = {"ceiling_steps_per_s": 1000.0 / ceiling_ms, "ceiling_images_per_s": batch * 1000.0 / ceiling_ms}
    ours = _train_from(_fused_loader(root, batch, 4), step, steps, to_device=False)
    theirs = _train_from(_torch_loader(root, batch, workers), step, steps, to_device=True)
    for name, r in (("spdl_torch", ours), ("torch_dataloader", theirs)):
        r["ratio_to_ceiling"] = r["steps_per_s"] / out["ceiling_steps_per_s"]
        r["gpu_idle_fraction"] = max(0.0, 1.0 - r["ratio_to_ceiling"])
        out[name] = r
    return out


def _big_jpegs(root: str, n: int, short: int = 1500) -> list[torch.Tensor]:
    """~1500 px photos made here from the bundle's (Lanczos upscale, quality 90): no large files to copy."""
    import io

    from PIL import Image

    paths, _, _ = list_images(root)
    out = []
    for p in paths[:n]:
        im = Image.open(p).convert("RGB")
        f = short / min(im.size)
        buf = io.BytesIO()
        im.resize((round(im.width * f), round(im.height * f)), Image.LANCZOS).save(buf, "JPEG", quality=90)
        out.append(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
    return out


def _datas(root: str, size: str, n: int) -> list[torch.Tensor]:
    import spdl_torch

    if size == "large":
        return _big_jpegs(root, n)
    return [spdl_torch.io.read_file(p) for p in list_images(root)[0][:n]]


def _rate(fn, n_images: int, reps: int = 5) -> float:
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return n_images * reps / (time.perf_counter() - t)


def nvjpeg(root: str, batch: int = 64) -> dict:
    """Images/s of eval decoding (resize 256, centre crop 224, normalised float32) to a GPU batch: nvJPEG path
    vs the 16-core CPU path (+ copy), for ~400 px and ~1500 px photos."""
    import spdl_torch

    kw = dict(height=SIZE, width=SIZE, resize_shorter=256, dtype=torch.float32, mean=MEAN, std=STD)
    out = {}
    for size in ("small", "large"):
        datas = _datas(root, size, batch)
        gpu = _rate(lambda: spdl_torch.io.decode_images(datas, device="cuda", **kw).data, len(datas))
        cpu = _rate(lambda: spdl_torch.io.decode_images(datas, pin_memory=True, **kw).data.cuda(non_blocking=True),
                    len(datas))
        out[size] = {"nvjpeg_images_per_s": gpu, "cpu_images_per_s": cpu, "ratio": gpu / cpu}
    return out


def torchvision_gpu(root: str, batch: int = 64) -> dict:
    """The GPU peer: torchvision's batched ``decode_jpeg(device="cuda")`` + v2 resize/crop/normalise on the GPU,
    against our nvJPEG path, same data and output."""
    import spdl_torch
    from torchvision.io import decode_jpeg
    from torchvision.transforms import v2

    t = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(SIZE), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize(MEAN, STD)])
    kw = dict(height=SIZE, width=SIZE, resize_shorter=256, dtype=torch.float32, mean=MEAN, std=STD)
    out = {}
    for size in ("small", "large"):
        datas = _datas(root, size, batch)

        def tv():
            return torch.stack([t(img) for img in decode_jpeg(datas, device="cuda")])

        ours = _rate(lambda: spdl_torch.io.decode_images(datas, device="cuda", **kw).data, len(datas))
        theirs = _rate(tv, len(datas))
        out[size] = {"spdl_torch_images_per_s": ours, "torchvision_images_per_s": theirs, "ratio": ours / theirs}
    return out
