"""Tar shards side by side: each contender one timed pass in a fresh process, interleaved, medians
and ratios. Batch 32, 2 workers, the real-photo set (``data/imagenet_like/train``) packed by ``write_shards``.

    python -m benchmarks.bench_shards --root data/imagenet_like/train [--reps 3] [--out DIR]
    python -m benchmarks.bench_shards --one MODE TRANSFORM SOURCE      (one pass; prints a JSON line)

Contenders (MODE): ``folder`` (spdl_torch.DataLoader + ImageFolder), ``shards`` (+ TarShardDataset, local
files), ``http`` (TarShardDataset from a local HTTP server, a separate process, 20 ms added to every
response), ``wds`` (torch's DataLoader, 2 worker processes, + ``webdataset`` on the same shards with the same
decoder: ``spdl_torch.io.decode_image`` and the same torchvision transform per sample), ``tarfile`` / ``table``
(only reading every member, one thread: through Python's tarfile, or by the member table: is the tar reader
the bottleneck?). TRANSFORM: ``eval``
(Resize 256, CenterCrop 224, float, Normalize) or ``train`` (RandomResizedCrop 224, flip, float, Normalize).
Also: images/s against the shuffle buffer size and against the shard size (``shards``, eval).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from benchmarks.workloads import MEAN, STD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _transform(name):
    import torch
    from torchvision.transforms import v2

    norm = [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)]
    if name == "eval":
        return v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), *norm])
    return v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(), *norm])


def _cpu():
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def one(mode: str, transform: str, source: str, buffer: int, epochs: int = 1) -> dict:
    sys.path.insert(0, REPO)
    import torch

    import spdl_torch
    from spdl_torch.datasets import ImageFolder, TarShardDataset, collate

    torch.manual_seed(0)
    tf = _transform(transform)
    server = None
    if mode == "folder":
        loader = spdl_torch.DataLoader(ImageFolder(source, transform=tf), batch_size=32, num_workers=2,
                                       shuffle=True, collate_fn=collate)
    elif mode in ("shards", "http", "s3"):
        index = os.path.join(source, "index.json")
        if mode == "http":
            server = subprocess.Popen([sys.executable, "-m", "tests._utils.range_server", source,
                                       "--delay", "0.02"], stdout=subprocess.PIPE, text=True, cwd=REPO)
            index = f"http://127.0.0.1:{server.stdout.readline().strip()}/index.json"
        if mode == "s3":
            server = subprocess.Popen([sys.executable, "-m", "tests._utils.s3_server", "--delay", "0.02"],
                                      stdout=subprocess.PIPE, text=True, cwd=REPO)
            index = _s3_upload(json.loads(server.stdout.readline()), source)
        ds = TarShardDataset(index, transform=tf, batch_size=32, shuffle_buffer=buffer)
        loader = spdl_torch.DataLoader(ds, batch_size=32, num_workers=2, collate_fn=collate)
    elif mode == "wds":
        import webdataset as wds

        from spdl_torch.io import decode_image

        urls = sorted(os.path.join(source, n) for n in os.listdir(source) if n.endswith(".tar"))

        def decode(sample):
            data = torch.frombuffer(bytearray(sample["jpeg"]), dtype=torch.uint8)
            return tf(decode_image(data)), int(sample["cls"])

        ds = wds.WebDataset(urls, shardshuffle=False, empty_check=False).shuffle(buffer).map(decode)
        loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2)
    elif mode in ("tarfile", "table"):
        from spdl_torch.datasets.shards._stream import ShardSet
        from spdl_torch.datasets.shards._tar import ShardCursor, local_opener

        shards = ShardSet(os.path.join(source, "index.json"), fetch=None, policy=None, max_concurrency=1,
                          chunk_size=1, read_ahead=1)
        gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
        c0, t0 = _cpu(), time.perf_counter()
        n = nbytes = 0
        for i, u in enumerate(shards.names):
            cur = ShardCursor(u, local_opener(u)) if mode == "tarfile" else shards.cursor(i)
            for s in cur.read(0, 1 << 62):
                n += 1
                nbytes += sum(int(t.numel()) for t in s.members.values())
            cur.close()
        dt = time.perf_counter() - t0
        return {"mode": mode, "transform": "-", "images": n, "images_per_s": n / dt, "MB_per_s": nbytes / dt / 1e6,
                "cpu_ms_per_image": 1000 * (_cpu() - c0) / n}
    else:
        raise SystemExit(f"unknown mode {mode}")
    gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
    c0, s0, t0 = _cpu(), _server_cpu(server), time.perf_counter()
    n = 0
    for _ in range(epochs):  # the loader's epochs (a new shuffle each); start-up counted once
        for x, y in loader:
            n += len(y)
    dt = time.perf_counter() - t0
    cpu, server_cpu = _cpu() - c0, _server_cpu(server) - s0
    if server is not None:
        server.terminate()
        server.wait()
    return {"mode": mode, "transform": transform, "images": n, "images_per_s": n / dt,
            "cpu_ms_per_image": 1000 * cpu / n, "server_cpu_ms_per_image": 1000 * server_cpu / n}


def _server_cpu(server) -> float:
    """CPU seconds of the local server and its children (the S3 server and its latency proxy), 0 without one:
    on a 2-core machine the server's CPU is taken from the loader's, which a remote store's is not."""
    if server is None:
        return 0.0
    import psutil

    from benchmarks.mem_probe import _cpu_s

    return _cpu_s(psutil.Process(server.pid))


def _s3_upload(info: dict, source: str) -> str:
    """The files of ``source`` put in a bucket of the S3 server (boto3, straight to moto, not through the proxy);
    the AWS environment set for the reader (through the proxy). Returns the prefix URL."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=info["moto"], aws_access_key_id=info["key"],
                      aws_secret_access_key=info["secret"], region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    prefix = os.path.basename(os.path.normpath(source))
    for name in sorted(os.listdir(source)):
        s3.upload_file(os.path.join(source, name), "bench", f"{prefix}/{name}")
    os.environ.update(AWS_ACCESS_KEY_ID=info["key"], AWS_SECRET_ACCESS_KEY=info["secret"], AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=info["endpoint"])
    return f"s3://bench/{prefix}/"


_PASS_ARGS: list[str] = []  # --buffer / --epochs of the main invocation, given to every pass


def _run(args: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-m", "benchmarks.bench_shards", "--one", *args, *_PASS_ARGS], capture_output=True,
                       text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=3)
    ap.add_argument("--buffer", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=1, help="epochs per timed pass (start-up is counted once)")
    ap.add_argument("--root", default="data/imagenet_like/train")
    ap.add_argument("--out", default="build/bench_shards")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sweeps", action="store_true", help="also the shuffle-buffer and shard-size sweeps")
    ap.add_argument("--modes", default="tarfile,table,folder,shards,http,s3,wds",
                    help="comma-separated contenders to run (default: all)")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(*a.one, a.buffer, a.epochs)))
        return
    sys.path.insert(0, REPO)
    from spdl_torch.datasets import ImageFolder, write_shards

    _PASS_ARGS[:] = ["--buffer", str(a.buffer), "--epochs", str(a.epochs)]

    shard_dirs = {}
    for mb in (100, 25, 5):
        d = os.path.join(a.out, f"shards_{mb}MB")
        if not os.path.exists(os.path.join(d, "index.json")):
            write_shards(ImageFolder(a.root), d, shard_size=mb << 20)
        shard_dirs[mb] = d
    n_shards = {mb: len(json.load(open(os.path.join(d, "index.json")))["shards"]) for mb, d in shard_dirs.items()}
    print(f"shards: {n_shards}", flush=True)
    results: dict[tuple, list[dict]] = {}
    plan = [("tarfile", "-", shard_dirs[100]), ("table", "-", shard_dirs[100])]
    for tfm in ("eval", "train"):
        plan += [("folder", tfm, a.root), ("shards", tfm, shard_dirs[100]), ("http", tfm, shard_dirs[100]),
                 ("s3", tfm, shard_dirs[100]), ("wds", tfm, shard_dirs[100]), ("wds", tfm, shard_dirs[5])]
    modes = set(a.modes.split(","))
    plan = [p for p in plan if p[0] in modes]
    for rep in range(a.reps):  # interleaved: every contender once per repetition
        for mode, tfm, src in plan:
            r = _run([mode, tfm, src])
            key = (mode, tfm, os.path.basename(src))
            results.setdefault(key, []).append(r)
            server = f", server {r['server_cpu_ms_per_image']:.2f} CPU ms/img" if r.get("server_cpu_ms_per_image") else ""
            print(rep, key, f"{r['images_per_s']:.0f} img/s, {r['cpu_ms_per_image']:.2f} CPU ms/img{server}", flush=True)
    med = {k: (statistics.median(r["images_per_s"] for r in v), statistics.median(r["cpu_ms_per_image"] for r in v))
           for k, v in results.items()}
    print("\nmedians (images/s, CPU ms/image):")
    for k, v in med.items():
        print(f"  {k}: {v[0]:.0f}, {v[1]:.2f}")
    for tfm in ("eval", "train"):
        if not {"folder", "shards", "http", "wds"} <= modes:
            f, s = med.get(("folder", tfm, "train"), (None,))[0], med.get(("shards", tfm, "shards_100MB"), (None,))[0]
            h = med.get(("http", tfm, "shards_100MB"), (None,))[0]
            print(f"{tfm}: shards/folder {s / f:.2f}x" if f and s else f"{tfm}:", f"http/shards {h / s:.2f}x" if h and s else "")
            continue
        f = med[("folder", tfm, "train")][0]
        s = med[("shards", tfm, "shards_100MB")][0]
        print(f"{tfm}: shards/folder {s / f:.2f}x; shards/wds(100MB) {s / med[('wds', tfm, 'shards_100MB')][0]:.2f}x; "
              f"shards/wds(5MB) {s / med[('wds', tfm, 'shards_5MB')][0]:.2f}x; "
              f"http/shards {med[('http', tfm, 'shards_100MB')][0] / s:.2f}x")
    for tfm in ("eval", "train"):  # remote over local, paired by repetition: median (min-max)
        local = results.get(("shards", tfm, "shards_100MB"))
        for remote in ("http", "s3"):
            got = results.get((remote, tfm, "shards_100MB"))
            if not local or not got:
                continue
            ips = sorted(g["images_per_s"] / b["images_per_s"] for g, b in zip(got, local))
            cpu = sorted(g["cpu_ms_per_image"] / b["cpu_ms_per_image"] for g, b in zip(got, local))
            server = statistics.median(g["server_cpu_ms_per_image"] for g in got)
            print(f"{tfm}: {remote}/local images/s {statistics.median(ips):.2f}x ({ips[0]:.2f}-{ips[-1]:.2f}), "
                  f"CPU per image {statistics.median(cpu):.2f}x ({cpu[0]:.2f}-{cpu[-1]:.2f}); the local server's "
                  f"CPU per image {server:.2f} ms (on these cores)")
    if a.sweeps:
        for buf in (1, 100, 1000, 4000):
            r = _run_buf(buf, shard_dirs[100])
            print(f"buffer {buf}: {r['images_per_s']:.0f} img/s, {r['cpu_ms_per_image']:.2f} CPU ms/img", flush=True)
        for mb, d in shard_dirs.items():
            r = _run(["shards", "eval", d])
            print(f"shard size {mb} MB ({n_shards[mb]} shards): {r['images_per_s']:.0f} img/s, "
                  f"{r['cpu_ms_per_image']:.2f} CPU ms/img", flush=True)


def _run_buf(buf: int, src: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "benchmarks.bench_shards", "--one", "shards", "eval", src, "--buffer",
                        str(buf)], capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
