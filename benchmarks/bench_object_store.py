"""S3 clients side by side on the same local S3 server: concurrent ranged GETs (throughput), the client's CPU per
MB, and the latency of a small ranged GET. The server is moto (``tests/_utils/s3_server.py``) in a
process of its own, started once; each client runs in a fresh process per pass, the clients interleaved.

    python -m benchmarks.bench_object_store [--reps 5] [--size-mb 32] [--chunk-kb 1024] [--concurrency 8]
    python -m benchmarks.bench_object_store --one CLIENT ENDPOINT KEY SECRET   (one pass; prints a JSON line)

CLIENT: ``obstore`` (asyncio, ``get_range_async``), ``aiobotocore`` (asyncio, ``get_object`` with ``Range``),
``s3fs`` (asyncio, ``_cat_file(start, end)``), ``s3torchconnector`` (AWS's CRT client, range-based readers, one
per thread: its readers are synchronous; unbuffered, each read one request). Each pass reads the object ``--passes`` times over in chunks, with
``--concurrency`` requests in flight, after ``--latency`` sequential 4 KiB reads (the median of those is the
latency: on a warm connection, the time to a small answer).

The server is Python: it bounds the throughput (the same bound for every client; its ranged GETs read only their
range, see ``s3_server._read_ranges_only``); what tells the clients apart is also the CPU each spends per MB and
its latency.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET, KEY = "bench", "object.bin"
CLIENTS = ("obstore", "aiobotocore", "s3fs", "s3torchconnector")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _plan(size: int, chunk: int, passes: int) -> list[tuple[int, int]]:
    ranges = [(a, min(a + chunk, size)) for a in range(0, size, chunk)] * passes
    random.Random(0).shuffle(ranges)
    return ranges


def _async_pass(read, ranges, latency, concurrency, size):
    import asyncio

    async def go():
        rng = random.Random(1)
        lat = []
        for _ in range(latency):
            a = rng.randrange(0, size - 4096)
            t = time.perf_counter()
            await read(a, a + 4096)
            lat.append(time.perf_counter() - t)
        sem = asyncio.Semaphore(concurrency)

        async def one(a, b):
            async with sem:
                n = len(await read(a, b))
                assert n == b - a, (n, a, b)
                return n

        c0, t0 = _cpu(), time.perf_counter()
        total = sum(await asyncio.gather(*(one(a, b) for a, b in ranges)))
        return lat, total, time.perf_counter() - t0, _cpu() - c0

    return go


def one(client: str, endpoint: str, key: str, secret: str, size: int, chunk: int, passes: int, latency: int,
        concurrency: int) -> dict:
    import asyncio

    ranges = _plan(size, chunk, passes)
    env = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": endpoint}
    os.environ.update(env)
    if client == "obstore":
        import obstore
        from obstore.store import S3Store

        store = S3Store(BUCKET, client_options={"allow_http": True})

        async def read(a, b):
            return await obstore.get_range_async(store, KEY, start=a, end=b)

        lat, total, wall, cpu = asyncio.run(_async_pass(read, ranges, latency, concurrency, size)())
        time.sleep(0.1)  # obstore's threads wake the loop after a call: let them return before the interpreter ends
    elif client == "aiobotocore":
        from aiobotocore.config import AioConfig
        from aiobotocore.session import get_session

        async def main():
            cfg = AioConfig(max_pool_connections=concurrency)
            async with get_session().create_client("s3", endpoint_url=endpoint, config=cfg) as s3:
                async def read(a, b):
                    r = await s3.get_object(Bucket=BUCKET, Key=KEY, Range=f"bytes={a}-{b - 1}")
                    async with r["Body"] as body:
                        return await body.read()

                return await _async_pass(read, ranges, latency, concurrency, size)()

        lat, total, wall, cpu = asyncio.run(main())
    elif client == "s3fs":
        import s3fs

        async def main():
            fs = s3fs.S3FileSystem(asynchronous=True, endpoint_url=endpoint, key=key, secret=secret,
                                   max_concurrency=concurrency)
            session = await fs.set_session()

            async def read(a, b):
                return await fs._cat_file(f"{BUCKET}/{KEY}", start=a, end=b)

            try:
                return await _async_pass(read, ranges, latency, concurrency, size)()
            finally:
                await session.close()

        lat, total, wall, cpu = asyncio.run(main())
    elif client == "s3torchconnector":
        import threading
        from concurrent.futures import ThreadPoolExecutor

        from s3torchconnector import S3ClientConfig, S3ReaderConstructor
        from s3torchconnector._s3client import S3Client

        s3 = S3Client("us-east-1", endpoint=endpoint, s3client_config=S3ClientConfig(force_path_style=True))
        local = threading.local()

        def read(a, b):
            r = getattr(local, "reader", None)
            if r is None:
                r = local.reader = s3.get_object(BUCKET, KEY, reader_constructor=S3ReaderConstructor.range_based(buffer_size=0))
            r.seek(a)
            return r.read(b - a)

        rng = random.Random(1)
        lat = []
        for _ in range(latency):
            a = rng.randrange(0, size - 4096)
            t = time.perf_counter()
            read(a, a + 4096)
            lat.append(time.perf_counter() - t)
        c0, t0 = _cpu(), time.perf_counter()
        with ThreadPoolExecutor(concurrency) as ex:
            total = sum(len(x) for x in ex.map(lambda r: read(*r), ranges))
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
    else:
        raise SystemExit(f"unknown client {client}")
    mb = total / 1e6
    return {"client": client, "MB": mb, "MB_per_s": mb / wall, "cpu_ms_per_MB": 1000 * cpu / mb,
            "latency_ms": 1000 * statistics.median(lat)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size-mb", type=float, default=32)
    ap.add_argument("--chunk-kb", type=int, default=1024)
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--latency", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--clients", default=",".join(CLIENTS))
    a = ap.parse_args()
    size, chunk = int(a.size_mb * (1 << 20)), a.chunk_kb << 10
    if a.one:
        print(json.dumps(one(*a.one, size, chunk, a.passes, a.latency, a.concurrency)))
        return
    server = subprocess.Popen([sys.executable, "-m", "tests._utils.s3_server"], stdout=subprocess.PIPE,
                              text=True, cwd=REPO)
    try:
        info = json.loads(server.stdout.readline())
        sys.path.insert(0, REPO)
        import boto3

        s3 = boto3.client("s3", endpoint_url=info["endpoint"], aws_access_key_id=info["key"],
                          aws_secret_access_key=info["secret"], region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=random.Random(0).randbytes(size))
        args = [info["endpoint"], info["key"], info["secret"], "--size-mb", str(a.size_mb), "--chunk-kb",
                str(a.chunk_kb), "--passes", str(a.passes), "--latency", str(a.latency), "--concurrency",
                str(a.concurrency)]
        results: dict[str, list[dict]] = {}
        for rep in range(a.reps):  # interleaved: every client once per repetition
            for client in a.clients.split(","):
                p = subprocess.run([sys.executable, "-m", "benchmarks.bench_object_store", "--one", client, *args],
                                   capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
                if p.returncode != 0:
                    print(f"{client}: failed: {p.stderr[-2000:]}", flush=True)
                    continue
                r = json.loads(p.stdout.strip().splitlines()[-1])
                results.setdefault(client, []).append(r)
                print(rep, client, f"{r['MB_per_s']:.0f} MB/s, {r['cpu_ms_per_MB']:.2f} CPU ms/MB, "
                      f"{r['latency_ms']:.2f} ms", flush=True)
    finally:
        server.terminate()
        server.wait()
    print(f"\n{a.size_mb:g} MiB object, {a.chunk_kb} KiB ranges x {a.passes} passes, {a.concurrency} in flight; "
          "median (min-max) of the repetitions:")
    print("| client | MB/s | client CPU ms per MB | 4 KiB GET latency, ms |")
    print("|---|---:|---:|---:|")
    for client, rs in results.items():
        cells = []
        for k, fmt in (("MB_per_s", "{:.0f}"), ("cpu_ms_per_MB", "{:.2f}"), ("latency_ms", "{:.2f}")):
            v = [r[k] for r in rs]
            cells.append(f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}-{fmt.format(max(v))})")
        print(f"| {client} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
