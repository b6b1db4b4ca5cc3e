"""Images/s of the fused batch op against per-image decoding + torchvision, on the real-photo set.

Eval transform everywhere: resize shorter side to 256 (antialiased bilinear), centre crop 224, float32,
ImageNet normalization; each batch of --batch-size images ends as one Tensor[B, 3, 224, 224] (a
DataLoader-sized batch: a 512-image float32 batch is a 308 MB allocation whose page faults would dominate).

  (a) spdl_torch.io.decode_images, one call per batch, native pool of 1 and of 2 threads
  (a') the same, 1 thread, with partial_decode=False (whole-image JPEG decode), for comparison
  (b) spdl_torch.io.decode_image + torchvision v2 per image, then torch.stack (calling thread)
  (c) Pillow (Image.open + convert) + torchvision v2 per image, then torch.stack (calling thread)

All in one process, repetitions interleaved (a1, a2, b, c, a1, a2, ...); medians and ratios printed,
with the process CPU time per image (all threads), which other load on the machine disturbs less.
Encoded bytes are read into memory first: file reading is not measured.

  .venv/bin/python benchmarks/bench_decode_images.py [--root data/imagenet_like] [--images 256] [--reps 5]
"""

import argparse
import glob
import io
import os
import statistics
import time

import torch
from PIL import Image
from torchvision.transforms import v2

import spdl_torch  # noqa: F401  (loads the ops)
from spdl_torch.io import decode_image, decode_images, get_num_threads, set_num_threads
from workloads import MEAN as _MEAN, STD as _STD

MEAN, STD = list(_MEAN), list(_STD)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default="data/imagenet_like")
    p.add_argument("--images", type=int, default=256, help="images per measurement")
    p.add_argument("--batch-size", type=int, default=32, help="images per batch (one op call / torch.stack)")
    p.add_argument("--reps", type=int, default=5, help="interleaved repetitions per method")
    p.add_argument("--torch-threads", type=int, default=1, help="torch intra-op threads for (b) and (c)")
    args = p.parse_args()

    paths = sorted(glob.glob(os.path.join(args.root, "**", "*.JPEG"), recursive=True))[: args.images]
    if not paths:
        raise SystemExit(f"no *.JPEG under {args.root}; run `make demo` (or `python -m tools.prepare_data`) first")
    blobs = [open(path, "rb").read() for path in paths]
    tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
    torch.set_num_threads(args.torch_threads)
    bs = args.batch_size
    starts = range(0, len(tensors), bs)

    def consume(batches) -> int:
        """Takes batches one at a time, as a training loop does (each dropped before the next is made, so
        its memory can be reused); returns the number of images."""
        images = 0
        for batch in batches:
            assert batch.shape[1:] == (3, 224, 224), batch.shape
            images += len(batch)
        return images

    tail = [v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(MEAN, STD)]
    tv_tensor = v2.Compose(tail)
    tv_pil = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.PILToTensor(),
                         v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])

    def fused(threads, partial_decode=True):
        def run():
            return consume(decode_images(tensors[s : s + bs], height=224, width=224, resize_shorter=256,
                                         dtype=torch.float32, mean=MEAN, std=STD, partial_decode=partial_decode).data
                           for s in starts)

        def setup():  # untimed: a pool of this size, its new threads warmed by one batch (a loader's steady state)
            set_num_threads(threads)
            decode_images(tensors[:bs], height=224, width=224, resize_shorter=256, dtype=torch.float32, mean=MEAN,
                          std=STD, partial_decode=partial_decode)

        run.setup = setup
        return run

    def decode_image_tv():
        return consume(torch.stack([tv_tensor(decode_image(t)) for t in tensors[s : s + bs]]) for s in starts)

    def pillow_tv():
        return consume(torch.stack([tv_pil(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs[s : s + bs]])
                       for s in starts)

    methods = {
        "(a) decode_images, 1 thread": fused(1),
        "(a) decode_images, 2 threads": fused(2),
        "(a') 1 thread, whole-image decode": fused(1, partial_decode=False),
        "(b) decode_image + torchvision v2": decode_image_tv,
        "(c) Pillow + torchvision v2": pillow_tv,
    }
    default_threads = get_num_threads()
    for fn in methods.values():  # warm-up (thread pools, caches), not timed
        if hasattr(fn, "setup"):
            fn.setup()
        fn()
    times = {name: [] for name in methods}
    cpu = {name: [] for name in methods}
    sys_cpu = {name: [] for name in methods}  # kernel time (page faults of new memory), part of cpu
    load_before = os.getloadavg()[0]
    for _ in range(args.reps):
        for name, fn in methods.items():
            if hasattr(fn, "setup"):
                fn.setup()
            t0, c0 = time.perf_counter(), os.times()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            c1 = os.times()
            cpu[name].append(c1.user + c1.system - c0.user - c0.system)
            sys_cpu[name].append(c1.system - c0.system)
            assert out == len(tensors)
    set_num_threads(default_threads)

    ref = len(tensors) / statistics.median(times["(a) decode_images, 1 thread"])
    print(f"{len(tensors)} images in batches of {bs} from {args.root}, {args.reps} interleaved reps, median; "
          f"torch threads {args.torch_threads}, CPUs {len(os.sched_getaffinity(0))}, torch {torch.__version__}; "
          f"1-min load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"| {'method':<36} | {'images/s':>9} | {'vs (a) 1 thread':>15} | {'CPU ms/image':>12} | {'of it sys':>9} |")
    print(f"|{'-' * 38}|{'-' * 11}|{'-' * 17}|{'-' * 14}|{'-' * 11}|")
    for name, ts in times.items():
        rate = len(tensors) / statistics.median(ts)
        cpu_ms = 1e3 * statistics.median(cpu[name]) / len(tensors)
        sys_ms = 1e3 * statistics.median(sys_cpu[name]) / len(tensors)
        print(f"| {name:<36} | {rate:>9.1f} | {rate / ref:>14.2f}x | {cpu_ms:>12.2f} | {sys_ms:>9.2f} |")
    med = {name: statistics.median(ts) for name, ts in times.items()}
    med_cpu = {name: statistics.median(c) for name, c in cpu.items()}
    one, two, pil = "(a) decode_images, 1 thread", "(a) decode_images, 2 threads", "(c) Pillow + torchvision v2"
    print(f"per core vs Pillow (c): {med[pil] / med[one]:.2f}x images/s, {med_cpu[pil] / med_cpu[one]:.2f}x CPU per image; "
          f"2 threads: {med[one] / (2 * med[two]):.0%} of 2 x (a) 1 thread")


if __name__ == "__main__":
    main()
