"""Summaries, target checks, markdown tables and bar charts for ``python -m benchmarks.run``."""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.contenders import LABELS, SHORT

METRICS = ("images_per_s", "images_per_s_epoch", "cpu_s_per_image", "mem_overhead_mb", "first_batch_s",
           "step_slowdown", "load_avg_before", "bound_images_per_s_1thread", "bound_images_per_s_pool")
REF, OURS = "torch_pil", "spdl_torch"
RECIPE_REF, RECIPE_OURS, RECIPE_DALI = "torch_recipe", "spdl_torch_recipe", "dali_recipe"
# The recipes' goals (benchmarks/recipes.py): (key, what, metric, other, comparison, threshold)
RECIPE_TARGETS = (
    ("recipe_ips_vs_torch", "images/s, spdl_torch / torch DataLoader", "images_per_s", RECIPE_REF, ">=", 2.5),
    ("recipe_cpu_vs_torch", "CPU s/image, spdl_torch / torch DataLoader", "cpu_s_per_image", RECIPE_REF, "<=", 0.4),
    ("recipe_ips_vs_dali", "images/s, spdl_torch / DALI CPU auto_aug", "images_per_s", RECIPE_DALI, ">=", 2.0),
)

# (key, description, metric, other contender or None, comparison, threshold)
TARGETS = (
    ("ips_vs_torch_pil", "images/s, spdl_torch / torch+PIL", "images_per_s", "torch_pil", ">=", 2.5),
    ("ips_vs_spdl08", "images/s, spdl_torch / spdl 0.8", "images_per_s", "spdl08", ">=", 1.5),
    ("ips_vs_bound", "images/s, spdl_torch / bound", "images_per_s", "bound", ">=", 0.9),
    ("cpu_vs_torch_pil", "CPU s/image, spdl_torch / torch+PIL", "cpu_s_per_image", "torch_pil", "<=", 0.5),
    ("mem_vs_torch_pil", "memory overhead, spdl_torch / torch+PIL", "mem_overhead_mb", "torch_pil", "<=", 0.4),
    ("first_batch", "time to first batch, spdl_torch (s)", "first_batch_s", None, "<", 0.5),
)
# The same images/s targets normalized by CPU: (images per CPU second of spdl_torch) / (that of the other),
# i.e. the inverse ratio of CPU s/image. Steadier than images/s when other jobs share the cores, and what
# images/s would be on an idle machine if every contender scaled to all cores.
CPU_TARGETS = (
    ("cpu_eff_vs_torch_pil", "images per CPU-s, spdl_torch / torch+PIL", "torch_pil", 2.5),
    ("cpu_eff_vs_spdl08", "images per CPU-s, spdl_torch / spdl 0.8", "spdl08", 1.5),
    ("cpu_eff_vs_bound", "images per CPU-s, spdl_torch / bound", "bound", 0.9),
)


# The recipes against the fused v2 one, the per-sample remainder against torch's DataLoader,
# and the peers: (key, what, metric, ours, other, op, threshold; None: no target, reported only).
PEER_TARGETS = (
    ("crop_vs_v2", "images/s, Resize+RandomCrop recipe / v2 recipe", "images_per_s", "spdl_torch_crop", "spdl_torch",
     ">=", 0.9),
    ("jitter_vs_torch", "images/s, + ColorJitter: spdl_torch / torch DataLoader + v2", "images_per_s",
     "spdl_torch_jitter", "torch_tvio_jitter", ">=", None),
    ("jitter_cpu_vs_torch", "CPU s/image, + ColorJitter: spdl_torch / torch DataLoader + v2", "cpu_s_per_image",
     "spdl_torch_jitter", "torch_tvio_jitter", "<=", None),
    ("ips_vs_dali", "images/s, spdl_torch / DALI CPU", "images_per_s", "spdl_torch", "dali_cpu", ">=", 3.0),
    ("cpu_vs_dali", "CPU s/image, spdl_torch / DALI CPU", "cpu_s_per_image", "spdl_torch", "dali_cpu", "<=", 0.4),
    ("ips_vs_torchcodec", "images/s, spdl_torch / torchcodec + v2", "images_per_s", "spdl_torch", "torch_codec",
     ">=", 2.0),
)


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs: list[dict], workloads: list[str], contenders: list[str], runs_on=None) -> dict:
    """workload -> contender -> {metric: median over the repetitions, ..., "reps", "ips_min", "ips_max",
    "vs_torch_pil": {metric: ratio}}: the contenders that run the workload (``runs_on(contender, workload)``;
    default: those with a run of it). For a recipe workload "vs_torch_pil" is against its torch DataLoader."""
    out: dict[str, dict] = {}
    for w in workloads:
        out[w] = {}
        for c in contenders:
            if not (runs_on(c, w) if runs_on else any(r["workload"] == w and r["contender"] == c for r in runs)):
                continue
            ok = [r for r in runs if r["workload"] == w and r["contender"] == c and "error" not in r]
            s = {m: _median([r.get(m) for r in ok]) for m in METRICS}
            s["reps"] = len(ok)
            s["errors"] = sum(1 for r in runs if r["workload"] == w and r["contender"] == c and "error" in r)
            ips = [r["images_per_s"] for r in ok]
            s["ips_min"], s["ips_max"] = (min(ips), max(ips)) if ips else (None, None)
            if c == OURS:
                fused = [r.get("fused_batch_no_copy") for r in ok]
                s["fused_batch_no_copy"] = all(fused) if fused and None not in fused else None
            if c == RECIPE_OURS:
                s["recipe_fused"] = next((r.get("recipe_fused") for r in ok), None)
            out[w][c] = s
        ref = out[w].get(REF) or out[w].get(RECIPE_REF)
        for c, s in out[w].items():
            s["vs_torch_pil"] = {m: _ratio(s.get(m), ref.get(m) if ref else None)
                                 for m in ("images_per_s", "cpu_s_per_image", "mem_overhead_mb")}
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


def check_targets(summary: dict) -> dict:
    """workload -> list of {key, what, value, target, met}; met is None when a contender is missing."""
    out = {}
    for w, by_c in summary.items():
        if RECIPE_OURS in by_c or RECIPE_REF in by_c:
            out[w] = _recipe_targets(by_c)
            continue
        ours = by_c.get(OURS)
        rows = []
        for key, what, metric, other, op, threshold in TARGETS:
            if ours is None:
                value = None
            elif other is None:
                value = ours.get(metric)
            else:
                value = _ratio(ours.get(metric), by_c.get(other, {}).get(metric))
            met = None if value is None else (value >= threshold if op == ">=" else
                                              value <= threshold if op == "<=" else value < threshold)
            rows.append({"key": key, "what": what, "value": value, "target": f"{op} {threshold}", "met": met})
        v1 = by_c.get("spdl_torch_v1")
        if v1 is not None:  # the classic recipe against the v2 one, both fused
            value = _ratio(v1.get("images_per_s"), ours.get("images_per_s") if ours else None)
            rows.append({"key": "v1_vs_v2", "what": "images/s, spdl_torch v1 recipe / v2 recipe", "value": value,
                         "target": ">= 0.9", "met": None if value is None else value >= 0.9, "v1": True})
        for key, what, metric, mine, other, op, threshold in PEER_TARGETS:
            if mine in by_c and other in by_c:
                value = _ratio(by_c[mine].get(metric), by_c[other].get(metric))
                met = None if value is None or threshold is None else (
                    value >= threshold if op == ">=" else value <= threshold)
                rows.append({"key": key, "what": what, "value": value, "met": met, "peer": True,
                             "target": "-" if threshold is None else f"{op} {threshold}"})
        for key, what, other, threshold in CPU_TARGETS:
            value = _ratio(by_c.get(other, {}).get("cpu_s_per_image"), ours.get("cpu_s_per_image") if ours else None)
            rows.append({"key": key, "what": what, "value": value, "target": f">= {threshold}",
                         "met": None if value is None else value >= threshold, "cpu_normalized": True})
        out[w] = rows
    return out


def _recipe_targets(by_c: dict) -> list[dict]:
    ours = by_c.get(RECIPE_OURS)
    rows = []
    for key, what, metric, other, op, threshold in RECIPE_TARGETS:
        value = _ratio(ours.get(metric), by_c[other].get(metric)) if ours and other in by_c else None
        met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
        rows.append({"key": key, "what": what, "value": value, "target": f"{op} {threshold}", "met": met,
                     "recipe": True})
    return rows


def _recipe_table(results: dict) -> list[str]:
    """The recipes side by side: one row per recipe workload."""
    rows = [(w, by_c) for w, by_c in results["summary"].items() if RECIPE_REF in by_c or RECIPE_OURS in by_c]
    if not rows:
        return []
    lines = ["", "Recipes (training transforms with augmentation; R1 torch DataLoader + torchvision ImageFolder, "
                 "R2 spdl_torch, R3 DALI CPU + auto_aug):", "",
             "| recipe | fused | images/s R1 / R2 / R3 | R2 / R1 | CPU ms/image R1 / R2 / R3 | R2 / R1 | R2 / R3 "
             "images/s |", "|---|---|---|---:|---|---:|---:|"]

    def get(by_c, c, m, scale=1.0):
        v = by_c.get(c, {}).get(m)
        return None if v is None else v * scale

    for w, by_c in rows:
        ips = [get(by_c, c, "images_per_s") for c in (RECIPE_REF, RECIPE_OURS, RECIPE_DALI)]
        cpu = [get(by_c, c, "cpu_s_per_image", 1e3) for c in (RECIPE_REF, RECIPE_OURS, RECIPE_DALI)]
        fused = by_c.get(RECIPE_OURS, {}).get("recipe_fused") or "-"
        def x(v):
            return "-" if v is None else f"{v:.2f}x"

        lines.append(f"| {w.removeprefix('recipe_')} | {fused} | {' / '.join(_f(v, '.0f') for v in ips)} "
                     f"| {x(_ratio(ips[1], ips[0]))} | {' / '.join(_f(v, '.2f') for v in cpu)} "
                     f"| {x(_ratio(cpu[1], cpu[0]))} | {x(_ratio(ips[1], ips[2]))} |")
    return lines


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def markdown(results: dict) -> str:
    m, v, cfg = results["machine"], results["versions"], results["config"]
    la0, la1 = m["load_avg_start"], m["load_avg_end"]
    lines = [
        f"Run {results['date']} ({'quick' if results['quick'] else 'full'}, {results['duration_s']:.0f} s): "
        f"`{results['command']}`",
        "",
        f"Machine: {m['cpu_affinity']} CPUs ({m['cpu_model']}), {_f(m['mem_total_gb'], '.0f')} GiB; "
        f"Python {m['python']}, torch {v['torch']}, torchvision {v['torchvision']}, Pillow {v['pillow']}, "
        f"spdl {v['spdl'] or 'not installed'}; spdl_torch {str(v['spdl_torch_commit'])[:10]}"
        f"{' (+ uncommitted changes)' if v['spdl_torch_dirty'] else ''}. "
        f"Load average (1/5/15 min) {la0[0]:.2f}/{la0[1]:.2f}/{la0[2]:.2f} at the start, "
        f"{la1[0]:.2f}/{la1[1]:.2f}/{la1[2]:.2f} at the end.",
        "",
        f"Batch {cfg['batch_size']}, {cfg['workers']} workers (processes for 1-2, threads for 3-4), "
        f"{cfg['reps']} interleaved repetitions, one fresh process per run, medians. Ratios are against "
        f"contender 1. Step slowdown: median time of a {cfg['step_iters']:,}-iteration Python busy loop run "
        f"by the consumer after each batch while the loader runs, divided by the same loop with no loader.",
    ]
    if results.get("skipped"):
        lines += ["", "Skipped: " + "; ".join(f"{k}: {why}" for k, why in results["skipped"].items())]
    for w, by_c in results["summary"].items():
        info = results["workloads"][w]
        lines += ["", f"**{w}** ({info['mode']} transform; {info['images']} images, "
                      f"{info['bytes'] / 2**20:.0f} MiB, from `{info['root']}`)", "",
                  "| contender | images/s | vs 1 | CPU ms/image | vs 1 | memory overhead MB | vs 1 "
                  "| 1st batch s | step slowdown | load avg |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c, s in by_c.items():
            r = s["vs_torch_pil"]
            cpu_ms = None if s["cpu_s_per_image"] is None else s["cpu_s_per_image"] * 1e3
            err = f" ({s['errors']} failed)" if s["errors"] else ""
            lines.append(
                f"| {LABELS[c]}{err} | {_f(s['images_per_s'], '.0f')} | {_f(r['images_per_s'], '.2f')}x "
                f"| {_f(cpu_ms, '.2f')} | {_f(r['cpu_s_per_image'], '.2f')}x | {_f(s['mem_overhead_mb'], '.0f')} "
                f"| {_f(r['mem_overhead_mb'], '.2f')}x | {_f(s['first_batch_s'], '.2f')} "
                f"| {_f(s['step_slowdown'], '.2f')}x | {_f(s['load_avg_before'], '.1f')} |")
        b = by_c.get("bound")
        if b and b.get("bound_images_per_s_pool") is not None:
            lines += ["", f"Bound: {b['bound_images_per_s_1thread']:.0f} images/s on 1 thread (x {cfg['workers']} = "
                          f"{b['images_per_s']:.0f}); the same loop with the native pool at {cfg['workers']} threads "
                          f"gave {b['bound_images_per_s_pool']:.0f} images/s (what the cores gave at that load)."]
    general = any(not any(t.get("recipe") for t in rows) for rows in results["targets"].values())
    lines += [] if not general else ["", "Targets (spdl_torch), images/s and resources:", "",
              "| workload | " + " | ".join(t[1] for t in TARGETS) + " |",
              "|---|" + "---:|" * len(TARGETS)]
    table2 = ["", "The images/s targets normalized by CPU time (images per CPU second; steadier under load):", "",
              "| workload | " + " | ".join(t[1] for t in CPU_TARGETS) + " |",
              "|---|" + "---:|" * len(CPU_TARGETS)]
    table3 = ["", "The classic torchvision.transforms (v1) recipe on the same fused dataset:", "",
              "| workload | images/s, spdl_torch v1 recipe / v2 recipe |", "|---|---:|"]
    for w, rows in results["targets"].items():
        if any(t.get("recipe") for t in rows):
            continue  # the recipe table below
        for table, sel in ((lines, [t for t in rows if not (t.get("cpu_normalized") or t.get("v1") or t.get("peer"))]),
                           (table2, [t for t in rows if t.get("cpu_normalized")]),
                           (table3, [t for t in rows if t.get("v1")])):
            if not sel and table is table3:
                continue
            cells = []
            for t in sel:
                mark = "" if t["met"] is None else (" ok" if t["met"] else " **missed**")
                cells.append(f"{_f(t['value'], '.2f')} ({t['target']}){mark}")
            table.append(f"| {w} | " + " | ".join(cells) + " |")
    lines += table2 if general else []
    if len(table3) > 5:
        lines += table3
    peer_rows = [(w, t) for w, rows in results["targets"].items() for t in rows if t.get("peer")]
    if peer_rows:
        lines += ["", "Recipes and peers:", "", "| workload | ratio | value | target |", "|---|---|---:|---|"]
        for w, t in peer_rows:
            mark = "" if t["met"] is None else (" ok" if t["met"] else " **missed**")
            lines.append(f"| {w} | {t['what']} | {_f(t['value'], '.2f')} | {t['target']}{mark} |")
    lines += _recipe_table(results)
    from benchmarks.fidelity import markdown as fidelity_markdown

    lines += fidelity_markdown(results.get("fidelity") or {})
    return "\n".join(lines) + "\n"


def plots(results: dict, out_dir: Path, stem: str) -> list[str]:
    """Grouped bar charts (one group per workload, one bar per contender; whiskers: min-max over the
    repetitions for images/s). Returns the paths written; [] when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots (pip install matplotlib; `make bench` does)")
        return []
    summary = results["summary"]
    workloads = list(summary)
    contenders = list(dict.fromkeys(c for by_c in summary.values() for c in by_c))
    charts = (("images_per_s", "images/s (higher is better)", 1.0, "images_per_s"),
              ("cpu_per_image", "CPU ms per image, all processes (lower is better)", 1e3, "cpu_s_per_image"),
              ("pss_overhead", "loader memory overhead, peak PSS MB (lower is better)", 1.0, "mem_overhead_mb"))
    written = []
    for name, title, scale, metric in charts:
        fig, ax = plt.subplots(figsize=(2.2 + 2.0 * len(workloads), 4.2))
        width = 0.8 / max(1, len(contenders))
        for k, c in enumerate(contenders):
            xs, ys, lo, hi = [], [], [], []
            for i, w in enumerate(workloads):
                s = summary[w].get(c, {})
                if s.get(metric) is None:
                    continue
                y = s[metric] * scale
                xs.append(i + (k - (len(contenders) - 1) / 2) * width)
                ys.append(y)
                if metric == "images_per_s" and s["ips_min"] is not None:
                    lo.append(y - s["ips_min"]), hi.append(s["ips_max"] - y)
            if not xs:
                continue
            err = [lo, hi] if metric == "images_per_s" and len(lo) == len(xs) else None
            bars = ax.bar(xs, ys, width, label=SHORT[c], yerr=err, capsize=2,
                          hatch="//" if c == "bound" else None, edgecolor="black", linewidth=0.4)
            ax.bar_label(bars, fmt="%.0f" if max(ys) >= 20 else "%.2f", fontsize=7, padding=1)
        ax.set_xticks(range(len(workloads)), workloads)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, ncols=min(5, len(contenders)), loc="upper center", bbox_to_anchor=(0.5, -0.08),
                  frameon=False)
        la = results["machine"]["load_avg_start"][0]
        fig.text(0.99, 0.01, f"{results['date'][:10]}, {results['machine']['cpu_affinity']} CPUs, load {la:.1f}",
                 ha="right", fontsize=7, color="gray")
        fig.tight_layout()
        path = out_dir / f"{stem}-{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    return written
