"""Benchmark of the spdl_torch.pipeline engine, optionally against spdl 0.8's ``spdl.pipeline``.

1. Engine overhead: items/s through a chain of 3 no-op sync stages (default 100k items), with
   concurrency 1 (input order) and concurrency 4 (completion order).
2. Scaling of a GIL-releasing op: ``spdl_torch.io.decode_image(path)`` as the stage function over the
   JPEGs of ``data/imagenet_like/train``, with 1 and 2 threads (concurrency = threads), plus a plain
   serial loop in the main thread as the no-engine reference.

Each configuration is run ``--repeats`` times (default 1) and the best run is reported. When ``spdl``
(0.8) is importable, the same pipelines are built with ``spdl.pipeline.PipelineBuilder`` in the same
process and the ratio spdl_torch / spdl is printed; spdl's overhead test uses ``--spdl-items``
(default 20k) items, as it is several times slower, to keep the whole run under 2 minutes (the rate
is a steady-state throughput either way).

Usage::

    .venv/bin/python benchmarks/bench_pipeline.py [--items 100000] [--data data/imagenet_like/train]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from spdl_torch.io import decode_image
from spdl_torch.pipeline import PipelineBuilder

try:
    import spdl.pipeline as spdl_pipeline  # spdl 0.8 (pip install spdl==0.8.0)
except ImportError:  # pragma: no cover
    spdl_pipeline = None


def _noop(x):
    return x


def build_ours(source, stages, num_threads, order):
    b = PipelineBuilder().add_source(source)
    for fn, c in stages:
        b.pipe(fn, concurrency=c, output_order=order)
    return b.add_sink(3).build(num_threads=num_threads)


def run_ours(pipeline) -> int:
    n = 0
    for _ in pipeline:
        n += 1
    return n


def build_spdl(source, stages, num_threads, order):
    b = spdl_pipeline.PipelineBuilder().add_source(source)
    for fn, c in stages:
        b.pipe(fn, concurrency=c, output_order=order)
    return b.add_sink(3).build(num_threads=num_threads)


def run_spdl(pipeline) -> int:
    n = 0
    with pipeline.auto_stop():
        for _ in pipeline.get_iterator(timeout=600):
            n += 1
    return n


def best_rate(run: Callable[[], int], repeats: int) -> tuple[float, int]:
    best, count = 0.0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        count = run()
        rate = count / (time.perf_counter() - t0)
        best = max(best, rate)
    return best, count


def list_images(root: str) -> list[str]:
    paths = []
    for d, _, files in os.walk(root):
        paths += [os.path.join(d, f) for f in files if f.lower().endswith((".jpeg", ".jpg"))]
    return sorted(paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=100_000, help="items for the overhead test (default 100000)")
    ap.add_argument("--data", default="data/imagenet_like/train", help="folder of JPEGs for the decode test")
    ap.add_argument("--max-images", type=int, default=0, help="use at most this many images (0: all)")
    ap.add_argument("--spdl-items", type=int, default=20_000, help="items for spdl's overhead test (default 20000)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per configuration; the best is reported")
    ap.add_argument("--no-spdl", action="store_true", help="skip the spdl 0.8 comparison")
    args = ap.parse_args()

    engines = {"spdl_torch": (build_ours, run_ours)}
    if spdl_pipeline is not None and not args.no_spdl:
        engines["spdl 0.8"] = (build_spdl, run_spdl)
    elif not args.no_spdl:
        print("spdl not installed: comparison skipped (pip install spdl==0.8.0)", file=sys.stderr)

    rows: list[tuple[str, str, float, str]] = []  # (test, engine, rate, unit)

    # 1. overhead
    for label, c, order in (("3 no-op stages, concurrency 1, input order", 1, "input"),
                            ("3 no-op stages, concurrency 4, completion order", 4, "completion")):
        stages = [(_noop, c)] * 3
        for name, (build, run) in engines.items():
            items = args.items if name == "spdl_torch" else min(args.items, args.spdl_items)
            rate, n = best_rate(lambda: run(build(range(items), stages, 3 * c, order)), args.repeats)
            assert n == items, (name, n)
            rows.append((label, name, rate, "items/s"))
            print(f"  {label:<52} {name:<11} {rate:>12,.0f} items/s ({items} items)", flush=True)

    # 2. decode scaling
    paths = list_images(args.data) if os.path.isdir(args.data) else []
    if not paths:
        print(f"\nNo JPEGs under {args.data!r}; create them with:\n"
              "  .venv/bin/python -m tools.prepare_data --out data/imagenet_like\n")
    else:
        if args.max_images:
            paths = paths[: args.max_images]
        for p in paths:  # warm the page cache so that every run reads from memory
            with open(p, "rb") as f:
                f.read()
        label = f"decode_image, serial loop ({len(paths)} JPEGs)"
        rate, _ = best_rate(lambda: sum(1 for p in paths if decode_image(p) is not None), args.repeats)
        rows.append((label, "no engine", rate, "images/s"))
        print(f"  {label:<52} {'no engine':<11} {rate:>12,.1f} images/s", flush=True)
        for threads in (1, 2):
            label = f"decode_image, {threads} thread(s), completion order"
            for name, (build, run) in engines.items():
                rate, n = best_rate(lambda: run(build(paths, [(decode_image, threads)], threads, "completion")),
                                    args.repeats)
                assert n == len(paths), (name, n)
                rows.append((label, name, rate, "images/s"))
                print(f"  {label:<52} {name:<11} {rate:>12,.1f} images/s", flush=True)

    # table
    print(f"\ncpus: {os.cpu_count()}  (affinity {len(os.sched_getaffinity(0))})  python {sys.version.split()[0]}")
    print(f"{'test':<52} {'engine':<11} {'rate':>12}  unit      ratio spdl_torch/spdl")
    by_test: dict[str, dict[str, float]] = {}
    for test, engine, rate, _ in rows:
        by_test.setdefault(test, {})[engine] = rate
    for test, engine, rate, unit in rows:
        ratio = ""
        if engine == "spdl_torch" and "spdl 0.8" in by_test[test]:
            ratio = f"{rate / by_test[test]['spdl 0.8']:.2f}x"
        print(f"{test:<52} {engine:<11} {rate:>12,.1f}  {unit:<9} {ratio}")
    ours = {t: e["spdl_torch"] for t, e in by_test.items() if "spdl_torch" in e}
    one = ours.get("decode_image, 1 thread(s), completion order")
    two = ours.get("decode_image, 2 thread(s), completion order")
    if one and two:
        print(f"\nspdl_torch decode scaling 2 threads / 1 thread: {two / one:.2f}x")


if __name__ == "__main__":
    main()
