"""Checks that need a CUDA device (run by benchmarks/gpu_check.sh on a GPU machine; skipped elsewhere): pinned
output, side-stream overlap, the normalisation kernel bit for bit against torch's ops, nvJPEG against the CPU
path (PSNR), and the loader's device path end to end."""

import math

import pytest
import torch
from torchvision.transforms import v2

import spdl_torch
from spdl_torch import cuda

from .. import images

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none on this machine)"),
]
needs_kernels = pytest.mark.skipif(not cuda.cuda_build(), reason="spdl_torch's CPU variant: no CUDA kernels")
needs_nvjpeg = pytest.mark.skipif(not cuda.nvjpeg_build(), reason="built without nvJPEG")

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _jpegs(n, seed=0, size=(120, 160)):
    return [images.encode_tensor(images.upsampled_noise(size[0] + 8 * i, size[1], seed=seed + i, cell=12), "JPEG",
                                 quality=95) for i in range(n)]


def _psnr(a, b):
    mse = ((a.double() - b.double()) ** 2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


def test_decode_images_pin_memory_is_pinned_and_the_loader_keeps_that_storage(image_folder, tmp_path):
    batch = spdl_torch.io.decode_images(_jpegs(2), height=16, width=16, pin_memory=True).data
    assert batch.is_pinned()
    image_folder(["a"], 8, lambda rng, c, k: images.upsampled_noise(30, 40, seed=rng))
    ds = spdl_torch.datasets.ImageFolder(str(tmp_path), transform=v2.Compose([v2.Resize(16), v2.CenterCrop(16)]))
    for x, _ in spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True):
        assert x.is_pinned()


@needs_kernels
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_normalize_kernel_is_torchs_ops_bit_for_bit(dtype, channels_last):
    x = torch.randint(0, 256, (8, 3, 67, 45), dtype=torch.uint8, device="cuda")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    ref = cuda.normalize(x, dtype, MEAN, STD, impl="torch")
    out = cuda.normalize(x, dtype, MEAN, STD, impl="kernel")
    torch.cuda.synchronize()
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    assert torch.equal(out.view(bits), ref.view(bits))
    assert out.is_contiguous(memory_format=torch.channels_last) == channels_last
    plain = cuda.normalize(x, dtype, impl="kernel")
    assert torch.equal(plain.view(bits), cuda.normalize(x, dtype).view(bits))


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


def test_transferred_batches_stay_valid_under_the_caching_allocator():
    transfer_in = [torch.full((4, 3, 64, 64), k, dtype=torch.uint8).pin_memory() for k in range(16)]
    sums = []
    for out in cuda.to_device(iter(transfer_in), "cuda", depth=3):
        torch.cuda._sleep(1_000_000)
        scratch = torch.empty_like(out).fill_(255)  # would reuse a block freed too early
        sums.append(out.float().mean().item())
        del scratch
    assert sums == [float(k) for k in range(16)]


@needs_nvjpeg
@pytest.mark.parametrize("geometry", ["eval", "train", "resize"])
def test_nvjpeg_path_against_the_cpu_path(geometry):
    data = _jpegs(6)
    seeds = torch.arange(100, 106)
    kw = dict(height=64, width=64, geometry=geometry, resize_shorter=72 if geometry == "eval" else 0,
              hflip_prob=0.5, seeds=seeds)
    cpu = spdl_torch.io.decode_images(data, dct_min_ratio=0, **kw).data
    gpu = spdl_torch.io.decode_images(data, device="cuda", **kw).data
    assert gpu.is_cuda and gpu.shape == cpu.shape and gpu.dtype == torch.uint8
    for i in range(len(data)):
        assert _psnr(gpu[i].cpu(), cpu[i]) >= 38.0, i


@needs_nvjpeg
def test_nvjpeg_normalised_output_and_bad_samples():
    data = _jpegs(3)
    out = spdl_torch.io.decode_images(data, height=32, width=32, resize_shorter=40, dtype=torch.float32, mean=MEAN,
                                      std=STD, device="cuda").data
    ref = spdl_torch.io.decode_images(data, height=32, width=32, resize_shorter=40, dtype=torch.float32, mean=MEAN,
                                      std=STD, dct_min_ratio=0).data
    assert (out.cpu() - ref).abs().mean().item() < 0.02
    bad = data[:1] + [images.encode_tensor(images.noise((8, 8, 3)), "PNG")]
    with pytest.raises(spdl_torch.DecodeError, match="JPEG only") as e:
        spdl_torch.io.decode_images(bad, height=8, width=8, device="cuda")
    assert e.value.sample_index == 1
    batch, ok = spdl_torch.io.decode_images(bad, height=8, width=8, device="cuda", strict=False)
    assert ok.tolist() == [True, False] and int(batch[1].abs().sum()) == 0


def test_loader_on_cuda_matches_the_cpu_loader(image_folder, tmp_path):
    image_folder(["a", "b"], 6, lambda rng, c, k: images.upsampled_noise(40 + k, 50, seed=rng), quality=95)
    t = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
                    v2.Normalize(MEAN, STD)])
    ds = spdl_torch.datasets.ImageFolder(str(tmp_path), transform=t, seed=3)
    gpu = list(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2, device="cuda"))
    cpu = list(spdl_torch.DataLoader(ds, batch_size=4, num_workers=2))
    for (x, y), (rx, ry) in zip(gpu, cpu):
        assert x.is_cuda and x.dtype == torch.float32 and torch.equal(y.cpu(), ry)
        assert (x.cpu() - rx).abs().max().item() <= 1.0 / 255 / min(STD) + 1e-5


@needs_kernels
def test_opcheck_normalize_batch():
    x = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8, device="cuda")
    torch.library.opcheck(torch.ops.spdl_torch.normalize_batch, (x,),
                          dict(mean=list(MEAN), std=list(STD), dtype=torch.float32))


@needs_nvjpeg
def test_opcheck_decode_images_cuda():
    data = _jpegs(2)
    torch.library.opcheck(torch.ops.spdl_torch.decode_images_cuda, (data,),
                          dict(device_index=0, height=16, width=16, resize_shorter=20),
                          test_utils=("test_schema", "test_faketensor"))
