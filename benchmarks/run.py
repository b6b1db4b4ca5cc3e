"""Benchmark suite: spdl_torch against torch's DataLoader, spdl 0.8 and the decode bound, side by side.

    python -m benchmarks.run [--quick] [--reps 3] [--workloads eval,train,hires] [--contenders ...]
                             [--root data/imagenet_like] [--hires-root data/imagenet_hires] [--limit N]
    make bench            # installs psutil, matplotlib and spdl==0.8.0 into .venv, builds the data, runs this

Every measurement ("run": one contender, one workload, one repetition) runs in a fresh Python process, so
that no allocator cache, thread pool or imported module of one contender helps or hurts the next, and the
memory baseline is a clean consumer. Runs are interleaved: for each workload, repetition 1 of every
contender, then repetition 2 of every contender, and so on; medians over the repetitions are reported.
The contenders and workloads are described in ``benchmarks/contenders.py``.

Per run (see ``benchmarks/measure.py``):

* ``images_per_s``: images after the first batch / seconds after the first batch (steady state);
  ``images_per_s_epoch`` counts the whole pass, start-up included. For the bound: images/s of one thread
  x ``workers`` (cores).
* ``cpu_s_per_image``: user + system CPU seconds of the process tree (consumer + worker processes or
  threads), from creating the loader to its shutdown, per image. The CPU time of the monitor's sampling
  thread (one PSS read from ``/proc`` costs 10-30 ms of CPU once torch is loaded) is measured with the
  thread's own CPU clock and subtracted (``cpu_s_monitor`` in the JSON).
* ``mem_overhead_mb``: peak PSS summed over the process tree minus the consumer's PSS before the loader
  was created (the dataset object is built before, so it counts as the consumer's).
* ``first_batch_s``: from creating the loader to holding the first batch.
* ``step_slowdown``: a second, shorter pass where the consumer runs ``python_step_seconds`` (a pure-Python
  busy loop standing in for the Python part of a training step) after each batch; the median step time
  while the loader runs / the median with no loader (null for the bound: there is no loader).

Output: ``benchmarks/results/<date>.json`` (machine, versions, every run, medians, ratios, targets),
``<date>.md`` (the tables, also printed) and bar charts ``<date>-*.png`` (matplotlib, when installed).
``--quick`` (one repetition, eval only, <= 256 images, no warm-up) checks that the suite works in well
under 2 minutes; its files are named ``<date>-quick.*``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
from benchmarks.recipes import RECIPES, workload as _recipe_workload  # noqa: E402

WORKLOADS = {  # name -> (dataset: "imagenet" | "hires", transform mode)
    "eval": ("imagenet", "eval"),
    "train": ("imagenet", "train"),
    "hires": ("hires", "eval"),
    **{_recipe_workload(r): ("imagenet", f"recipe:{r}") for r in RECIPES},  # benchmarks/recipes.py
}
# --workloads recipes: every recipe workload
WORKLOAD_GROUPS = {"recipes": [_recipe_workload(r) for r in RECIPES]}
MONITOR_INTERVAL_S = 0.1
RUN_FIELDS = ("images", "batches", "images_per_s", "images_per_s_epoch", "cpu_s_per_image", "mem_overhead_mb",
              "first_batch_s", "step_slowdown", "wall_s", "cpu_s", "peak_pss_mb", "baseline_pss_mb",
              "step_idle_ms", "step_loaded_ms", "load_avg_before", "load_avg_after")


# ---------------------------------------------------------------------------------------------------------
# Child: one measurement in a fresh process
# ---------------------------------------------------------------------------------------------------------


def _child(spec: dict) -> dict:
    import torch

    from benchmarks import contenders as C
    from benchmarks.measure import ResourceMonitor, python_step_seconds

    torch.set_num_threads(spec["torch_threads"])
    paths, labels, _ = C.list_images(spec["root"])
    if spec["limit"]:
        paths, labels = paths[: spec["limit"]], labels[: spec["limit"]]
    contender, mode, bs, workers = spec["contender"], spec["mode"], spec["batch_size"], spec["workers"]
    dataset, make = C.build(contender, paths, labels, mode, bs, workers, root=spec["root"])
    recipe = mode.split(":", 1)[1] if mode.startswith("recipe:") else None
    idle = [python_step_seconds(spec["step_iters"]) for _ in range(9)]
    step_idle = statistics.median(idle[2:])

    load_before = os.getloadavg()[0]
    fused = None
    with ResourceMonitor(interval_s=MONITOR_INTERVAL_S) as mon:
        t0 = time.perf_counter()
        loader = make()
        it = iter(loader)
        images, targets = next(it)
        t1 = time.perf_counter()
        size = RECIPES[recipe] if recipe else C.SIZE
        if tuple(images.shape[1:]) != (3, size, size) or images.dtype != torch.float32:
            raise RuntimeError(f"{contender}: unexpected batch {tuple(images.shape)} {images.dtype}")
        if contender in ("spdl_torch", "spdl_torch_v1", "spdl_torch_crop"):
            fused = C.is_fused_batch(images)
        n_first = n = len(targets)
        batches = 1
        del images, targets
        for images, targets in it:
            n += len(targets)
            batches += 1
        t2 = time.perf_counter()
        del images, targets, it, loader
        gc.collect()
    usage = mon.usage
    monitor_cpu = usage.monitor_cpu_s  # the sampler's own CPU time, already left out of usage.cpu_s
    load_after = os.getloadavg()[0]
    if n != len(paths):
        raise RuntimeError(f"{contender}: {n} images loaded, expected {len(paths)}")

    steady = (n - n_first) / (t2 - t1) if n > n_first else n_first / (t1 - t0)
    epoch = n / (t2 - t0)
    scale = workers if contender == "bound" else 1
    rec = {
        "images": n,
        "batches": batches,
        "images_per_s": steady * scale,
        "images_per_s_epoch": epoch * scale,
        "cpu_s_per_image": usage.cpu_s / n,
        "mem_overhead_mb": usage.overhead_pss_bytes / 2**20,
        "first_batch_s": t1 - t0,
        "wall_s": usage.wall_s,
        "cpu_s": usage.cpu_s,
        "cpu_s_monitor": monitor_cpu,
        "peak_pss_mb": usage.peak_pss_bytes / 2**20,
        "baseline_pss_mb": usage.baseline_pss_bytes / 2**20,
        "step_idle_ms": step_idle * 1e3,
        "step_loaded_ms": None,
        "step_slowdown": None,
        "load_avg_before": load_before,
        "load_avg_after": load_after,
    }
    if contender == "bound":
        # Reference for a loaded machine: the same loop with the native pool at `workers` threads (what the
        # cores actually give now, no loader), next to the ideal 1 thread x workers above.
        rec["bound_images_per_s_1thread"] = steady
        t = time.perf_counter()
        m = sum(len(y) for _, y in C._Bound(paths, labels, mode, bs, threads=workers))
        rec["bound_images_per_s_pool"] = m / (time.perf_counter() - t)
    if fused is not None:
        rec["fused_batch_no_copy"] = fused
    if contender == "spdl_torch_recipe":
        from benchmarks.recipes import fused as recipe_fused

        rec["recipe_fused"] = recipe_fused(dataset)

    if contender != "bound" and spec["step_batches"] > 0:  # responsiveness pass
        loader = make()
        it = iter(loader)
        next(it)
        loaded = []
        for _ in it:
            loaded.append(python_step_seconds(spec["step_iters"]))
            if len(loaded) >= spec["step_batches"]:
                break
        if hasattr(it, "close"):
            it.close()
        del it, loader
        gc.collect()
        if loaded:
            rec["step_loaded_ms"] = statistics.median(loaded) * 1e3
            rec["step_slowdown"] = statistics.median(loaded) / step_idle
            rec["step_samples"] = len(loaded)
    return rec


# ---------------------------------------------------------------------------------------------------------
# Parent: plan, progress, results
# ---------------------------------------------------------------------------------------------------------


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:  # noqa: BLE001
        return None


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    model = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        mem = psutil.virtual_memory().total
    except Exception:  # noqa: BLE001
        mem = None
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)),
        "mem_total_gb": mem / 2**30 if mem else None,
        "python": sys.version.split()[0],
    }


def versions() -> dict:
    return {
        "torch": _version("torch"),
        "torchvision": _version("torchvision"),
        "pillow": _version("pillow"),
        "numpy": _version("numpy"),
        "psutil": _version("psutil"),
        "spdl": _version("spdl"),
        "spdl_io": _version("spdl_io"),
        "nvidia_dali": _version("nvidia-dali-cuda120"),
        "torchcodec": _version("torchcodec"),
        "spdl_torch_commit": _git("rev-parse", "HEAD"),
        "spdl_torch_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


def _run_child(spec: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        cmd = [sys.executable, "-m", "benchmarks.run", "--child", json.dumps(spec), "--child-out", str(out)]
        try:
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if proc.returncode or not out.exists():
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-15:]
            return {"error": f"exit status {proc.returncode}: " + "\n".join(tail)}
        return json.loads(out.read_text())


def _warm_page_cache(paths: list[str]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def _rewrite_report(path: Path, no_plots: bool) -> int:
    from benchmarks import report

    results = json.loads(path.read_text())
    workloads, contenders = list(results["workloads"]), list(results["contenders"])
    results["summary"] = report.summarize(results["runs"], workloads, contenders)
    results["targets"] = report.check_targets(results["summary"])
    results["plots"] = [] if no_plots else report.plots(results, path.parent, path.stem)
    md = report.markdown(results)
    path.write_text(json.dumps(results, indent=1) + "\n")
    path.with_suffix(".md").write_text(md)
    print(md)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from benchmarks.contenders import CONTENDERS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--quick", action="store_true", help="1 repetition, eval only, <= 256 images, no warm-up")
    p.add_argument("--reps", type=int, default=None, help="interleaved repetitions (default 3; quick: 1)")
    p.add_argument("--workloads", default=None,
                   help="comma list of eval,train,hires, recipes (every recipe_* workload) or recipe_<name> "
                        "(default all; quick: eval)")
    p.add_argument("--contenders", default=",".join(CONTENDERS), help=f"comma list of {','.join(CONTENDERS)}")
    p.add_argument("--root", default="data/imagenet_like", help="ImageNet-like folder (its train/ is used)")
    p.add_argument("--hires-root", default="data/imagenet_hires", help="high-resolution folder (--variant hires)")
    p.add_argument("--limit", type=int, default=None, help="at most this many images per workload (quick: 256)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                   help="worker processes / threads (default: the CPUs this process may use)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads in each measured process (default 1, as in DataLoader workers)")
    p.add_argument("--step-iters", type=int, default=20_000, help="busy-loop iterations of one 'training step'")
    p.add_argument("--step-batches", type=int, default=None,
                   help="batches in the responsiveness pass (default 16; quick: 4)")
    p.add_argument("--out-dir", default=str(REPO / "benchmarks" / "results"))
    p.add_argument("--name", default=None, help="file stem of the outputs (default <date>, quick: <date>-quick)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run before it is abandoned")
    p.add_argument("--report", default=None, metavar="JSON",
                   help="no measurement: recompute medians, targets, tables and plots of a results JSON")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.reps is None:
        args.reps = 1 if args.quick else 3
    if args.workloads is None:
        args.workloads = "eval" if args.quick else ",".join(WORKLOADS)
    if args.limit is None and args.quick:
        args.limit = 256
    if args.step_batches is None:
        args.step_batches = 4 if args.quick else 16
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        rec = _child(json.loads(args.child))
        Path(args.child_out).write_text(json.dumps(rec))
        # The result is written: skip interpreter finalization, so that a contender's shutdown (a worker
        # thread still finishing a batch after the early `break`) is neither timed nor able to fail the run.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    from tqdm import tqdm

    from benchmarks import contenders as C
    from benchmarks import fidelity, report

    if args.report:
        return _rewrite_report(Path(args.report), args.no_plots)

    workloads = [x for w in args.workloads.split(",") if w.strip()
                 for x in WORKLOAD_GROUPS.get(w.strip(), [w.strip()])]
    chosen = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r}; expected {', '.join(WORKLOADS)}")
    for c in chosen:
        if c not in C.CONTENDERS:
            raise SystemExit(f"unknown contender {c!r}; expected {', '.join(C.CONTENDERS)}")

    skipped = {c: why for c in chosen if (why := C.unavailable(c))}
    active = [c for c in chosen if c not in skipped]

    roots = {"imagenet": args.root, "hires": args.hires_root}
    wl_info: dict[str, dict] = {}
    for w in list(workloads):
        data, mode = WORKLOADS[w]
        try:
            paths, _, classes = C.list_images(roots[data])
        except (FileNotFoundError, OSError) as e:
            hint = ("python -m tools.prepare_data --out data/imagenet_hires --variant hires" if data == "hires"
                    else "python -m tools.prepare_data --out data/imagenet_like")
            print(f"skipping workload {w}: no images under {roots[data]!r} ({e}); build them with: {hint}",
                  file=sys.stderr)
            workloads.remove(w)
            skipped[f"workload:{w}"] = f"no images under {roots[data]}"
            continue
        if args.limit:
            paths = paths[: args.limit]
        _warm_page_cache(paths)
        wl_info[w] = {"root": roots[data], "mode": mode, "images": len(paths), "classes": len(classes),
                      "bytes": sum(os.path.getsize(p) for p in paths)}
    if not workloads or not active:
        raise SystemExit("nothing to run")

    def spec(c: str, w: str, limit: int | None) -> dict:
        return {"contender": c, "workload": w, "mode": wl_info[w]["mode"], "root": wl_info[w]["root"],
                "limit": limit or 0, "batch_size": args.batch_size, "workers": args.workers,
                "torch_threads": args.torch_threads, "step_iters": args.step_iters,
                "step_batches": args.step_batches}

    started = _dt.datetime.now()
    stem = args.name or (started.strftime("%Y-%m-%d") + ("-quick" if args.quick else ""))
    load_start = os.getloadavg()
    def runs_on(c: str, w: str) -> bool:
        return C.applies(c, WORKLOADS[w][1]) is None

    for w in workloads:
        for c in active:
            why = C.applies(c, WORKLOADS[w][1])
            if why and C.is_recipe(c) == C.is_recipe(WORKLOADS[w][1]):  # a real gap, not the split of the suite
                skipped[f"{c}:{w}"] = why
    active = [c for c in active if any(runs_on(c, w) for w in workloads)]
    if not active:
        raise SystemExit("nothing to run")
    plan = [(w, r, c) for w in workloads for r in range(args.reps) for c in active if runs_on(c, w)]
    warmup = [] if args.quick else [(next(w for w in workloads if runs_on(c, w)), -1, c) for c in active]
    runs: list[dict] = []
    with tqdm(total=len(warmup) + len(plan), unit="run", desc="bench", dynamic_ncols=True) as bar:
        for w, r, c in warmup + plan:
            bar.set_postfix_str(f"{w} {'warm-up' if r < 0 else f'rep {r + 1}'} {c}")
            limit = min(args.limit or 10**9, 4 * args.batch_size) if r < 0 else args.limit
            t0 = time.perf_counter()
            rec = _run_child(spec(c, w, limit), args.timeout)
            bar.update(1)
            if r < 0:
                if "error" in rec:
                    tqdm.write(f"warm-up of {c} failed: {rec['error']}")
                continue
            rec = {"workload": w, "contender": c, "rep": r + 1, "seconds": time.perf_counter() - t0, **rec}
            runs.append(rec)
            if "error" in rec:
                tqdm.write(f"{w} rep {r + 1} {c}: FAILED: {rec['error']}")
            else:
                tqdm.write(f"{w:<6} rep {r + 1} {C.SHORT[c]:<11} {rec['images_per_s']:8.1f} img/s  "
                           f"{rec['cpu_s_per_image'] * 1e3:6.2f} CPU ms/img  {rec['mem_overhead_mb']:7.1f} MB  "
                           f"1st {rec['first_batch_s']:.2f} s  load {rec['load_avg_before']:.2f}")

    results = {
        "schema": "spdl_torch-bench/1",
        "date": started.isoformat(timespec="seconds"),
        "duration_s": (_dt.datetime.now() - started).total_seconds(),
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.run", *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        "machine": {**machine_info(), "load_avg_start": load_start, "load_avg_end": os.getloadavg()},
        "versions": versions(),
        "config": {"batch_size": args.batch_size, "workers": args.workers, "reps": args.reps,
                   "torch_threads": args.torch_threads, "step_iters": args.step_iters,
                   "step_batches": args.step_batches, "limit": args.limit, "process_per_run": True},
        "workloads": wl_info,
        "contenders": {c: C.LABELS[c] for c in active},
        "skipped": skipped,
        "runs": runs,
    }
    if "eval" in wl_info and not args.quick:  # each contender's eval batch against torchvision's (PSNR)
        results["fidelity"] = fidelity.measure([c for c in active if not C.is_recipe(c)], wl_info["eval"]["root"],
                                               args.batch_size, args.workers)
    results["summary"] = report.summarize(runs, workloads, active, runs_on)
    results["targets"] = report.check_targets(results["summary"])
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results["plots"] = [] if args.no_plots else report.plots(results, out_dir, stem)
    md = report.markdown(results)
    (out_dir / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(md)
    print(md)
    print(f"wrote {out_dir / (stem + '.json')}, {stem}.md" + "".join(f", {Path(p).name}" for p in results["plots"]))
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
