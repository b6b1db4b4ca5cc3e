"""`python -m benchmarks.run --quick` runs end to end on a tiny folder and writes every field.

Only proves that the suite works: no timing assertion. spdl 0.8 (contender 3) is skipped by the suite when
it is not importable; psutil is needed by the resource monitor. The peers of benchmarks/peers.py (DALI,
torchcodec: benchmark-only packages, slow to start) and the ColorJitter variants are left out.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("psutil")
pytest.importorskip("torchvision")

REPO = Path(__file__).resolve().parent.parent.parent


def _make_folder(root: Path, n: int = 64) -> None:
    import numpy as np

    from tests._utils import images

    rng = np.random.default_rng(0)
    for i in range(n):
        h, w = (int(x) for x in rng.integers(260, 420, size=2))
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([(x * 255 // w), (y * 255 // h), rng.integers(0, 256, size=(h, w))], axis=-1)
        images.write(root / "train" / f"class{i % 4}" / f"img{i:03d}.JPEG", img.astype(np.uint8), quality=90)


def test_bench_quick_writes_every_field(tmp_path):
    from benchmarks.contenders import CONTENDERS, is_recipe, unavailable
    from benchmarks.peers import PEERS
    from benchmarks.run import RUN_FIELDS

    # the jitter pair: variants; the recipe contenders: test_bench_quick_recipes
    chosen = [c for c in CONTENDERS if c not in PEERS and not c.endswith("_jitter") and not is_recipe(c)]

    _make_folder(tmp_path / "data")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--root", str(tmp_path / "data"), "--limit", "64",
           "--reps", "1", "--workloads", "eval", "--step-batches", "1", "--out-dir", str(out), "--name", "t",
           "--contenders", ",".join(chosen)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=150,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    res = json.loads((out / "t.json").read_text())
    assert (out / "t.md").exists()
    expected = [c for c in chosen if not unavailable(c)]
    assert list(res["contenders"]) == expected
    if unavailable("spdl08"):
        assert "spdl08" in res["skipped"]
    for key in ("date", "machine", "versions", "config", "workloads", "runs", "summary", "targets", "plots"):
        assert key in res, key
    assert len(res["machine"]["load_avg_start"]) == 3
    assert res["workloads"]["eval"]["images"] == 64

    runs = {r["contender"]: r for r in res["runs"]}
    assert set(runs) == set(expected)
    for c, r in runs.items():
        assert "error" not in r, (c, r.get("error"))
        for field in RUN_FIELDS:
            assert field in r, (c, field)
            if c == "bound" and field in ("step_loaded_ms", "step_slowdown"):
                continue  # no loader: not applicable
            assert r[field] is not None, (c, field)
        assert r["images"] == 64 and r["images_per_s"] > 0 and r["cpu_s_per_image"] > 0
    assert runs["spdl_torch"]["fused_batch_no_copy"] is True
    assert runs["spdl_torch_v1"]["fused_batch_no_copy"] is True  # the classic recipe fuses too
    assert runs["spdl_torch_crop"]["fused_batch_no_copy"] is True  # Resize + RandomCrop fuses
    for c in expected:
        s = res["summary"]["eval"][c]
        for field in ("images_per_s", "cpu_s_per_image", "mem_overhead_mb", "first_batch_s", "step_slowdown"):
            assert field in s, (c, field)
    assert {t["key"] for t in res["targets"]["eval"]} >= {"ips_vs_torch_pil", "ips_vs_bound", "first_batch"}


def test_bench_quick_recipes(tmp_path):
    # One augmented recipe (the tensor-backend TrivialAugmentWide preset) on its torch and spdl_torch
    # contenders: the run works, the recipe fuses, the recipe table and its goals are written.
    _make_folder(tmp_path / "data", n=48)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "benchmarks.run", "--quick", "--root", str(tmp_path / "data"), "--limit", "48",
           "--reps", "1", "--workloads", "recipe_ta_v2", "--step-batches", "1", "--out-dir", str(out), "--name", "t",
           "--contenders", "torch_recipe,spdl_torch_recipe", "--no-plots"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((out / "t.json").read_text())
    assert list(res["contenders"]) == ["torch_recipe", "spdl_torch_recipe"]
    runs = {r["contender"]: r for r in res["runs"]}
    for c, r in runs.items():
        assert "error" not in r, (c, r.get("error"))
        assert r["images"] == 48 and r["images_per_s"] > 0 and r["cpu_s_per_image"] > 0
    assert runs["spdl_torch_recipe"]["recipe_fused"] == "all"
    assert {t["key"] for t in res["targets"]["recipe_ta_v2"]} == {"recipe_ips_vs_torch", "recipe_cpu_vs_torch",
                                                                  "recipe_ips_vs_dali"}
    assert "| ta_v2 | all |" in (out / "t.md").read_text()
