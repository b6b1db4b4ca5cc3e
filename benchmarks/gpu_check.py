"""One part of the device check, or its report (benchmarks/gpu_check.sh runs the parts, each under a timeout).

    python -m benchmarks.gpu_check part NAME --root DATA --json OUT/NAME.json [--dry-run]
    python -m benchmarks.gpu_check report --dir OUT      # OUT/gpu_check.json + OUT/gpu_check.md

A part that cannot run (no GPU, the dry run, a missing build) writes {"skipped": reason}; one that fails
writes {"error": message}: the report says which measurements remain.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import traceback

PARTS = ("h2d", "overlap", "train", "scaling", "nvjpeg", "torchvision_gpu")
GPU_PARTS = ("h2d", "overlap", "train", "nvjpeg", "torchvision_gpu")


def run_part(name: str, root: str, dry: bool) -> dict:
    import torch

    if name in GPU_PARTS and (dry or not torch.cuda.is_available()):
        return {"skipped": "dry run" if dry else "no CUDA device"}
    if name in ("nvjpeg", "torchvision_gpu"):
        from spdl_torch._build_info import nvjpeg_build

        if name == "nvjpeg" and not nvjpeg_build():
            return {"skipped": "spdl_torch built without nvJPEG"}
    if name == "scaling":
        from .gpu_check_cpu import scaling

        if dry:
            return scaling(root, [1, 2], batch=32, limit=128)
        return scaling(root, [1, 2, 4, 8, 16])
    from . import gpu_check_gpu

    return getattr(gpu_check_gpu, name)(root)


def _goal(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def _fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def report(out_dir: str) -> dict:
    parts = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "part_*.json"))):
        with open(path) as f:
            parts[os.path.basename(path)[5:-5]] = json.load(f)
    steps = []
    steps_path = os.path.join(out_dir, "steps.tsv")
    if os.path.exists(steps_path):
        with open(steps_path) as f:
            steps = [dict(zip(("step", "rc", "seconds", "note"), line.rstrip("\n").split("\t"))) for line in f]
    goals = {}
    tr, sc, nv, tv = (parts.get(k, {}) for k in ("train", "scaling", "nvjpeg", "torchvision_gpu"))
    goals["training >= 97% of the dummy ceiling"] = (
        tr["spdl_torch"]["ratio_to_ceiling"] >= 0.97 if "spdl_torch" in tr else None)
    goals["first batch on the GPU < 1 s after iter()"] = (
        tr["spdl_torch"]["first_batch_s"] < 1 if tr.get("spdl_torch", {}).get("first_batch_s") is not None else None)
    sp = sc.get("eval_speedup_max_vs_1")
    goals["fused eval recipe: 16 threads >= 12x 1 thread"] = sp["x"] >= 12 if sp and sp["threads"] == 16 else None
    ratios = sc.get("ratio_vs_torch") or {}
    goals[">= 2x torch DataLoader at every worker count"] = min(ratios.values()) >= 2 if ratios else None
    goals["nvJPEG >= 3x the 16-core CPU path on large photos"] = nv["large"]["ratio"] >= 3 if "large" in nv else None
    goals["nvJPEG path >= torchvision's batched GPU decode"] = (
        min(tv[s]["ratio"] for s in ("small", "large")) >= 1 if "large" in tv else None)
    result = {"steps": steps, "parts": parts, "goals": {k: _goal(v) for k, v in goals.items()}}
    with open(os.path.join(out_dir, "gpu_check.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    lines = ["# Device check (benchmarks/gpu_check.sh)", "", "## Steps", "", "| step | rc | s | note |", "|---|---|---|---|"]
    lines += [f"| {s['step']} | {s['rc']} | {s['seconds']} | {s.get('note', '')} |" for s in steps]
    lines += ["", "## Goals", "", "| goal | result |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in result["goals"].items()]
    lines += ["", "## Measurements", ""]
    for name, data in parts.items():
        lines.append(f"### {name}")
        lines.append("")
        lines.append("```")
        lines.append(json.dumps(data, indent=1, default=_fmt))
        lines.append("```")
        lines.append("")
    with open(os.path.join(out_dir, "gpu_check.md"), "w") as f:
        f.write("\n".join(lines))
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("part")
    p.add_argument("name", choices=PARTS)
    p.add_argument("--root", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--dry-run", action="store_true")
    r = sub.add_parser("report")
    r.add_argument("--dir", required=True)
    args = ap.parse_args()
    if args.cmd == "report":
        res = report(args.dir)
        print("\n".join(f"{k}: {v}" for k, v in res["goals"].items()))
        return 0
    try:
        data = run_part(args.name, args.root, args.dry_run)
    except Exception as e:  # noqa: BLE001 -- recorded in the report
        data = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
    with open(args.json, "w") as f:
        json.dump(data, f, indent=1, default=str)
    print(args.name, json.dumps(data, default=_fmt)[:600])
    return 1 if "error" in data else 0


if __name__ == "__main__":
    sys.exit(main())
