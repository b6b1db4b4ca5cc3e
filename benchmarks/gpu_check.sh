#!/usr/bin/env bash
# The GPU check: one run on a GPU machine (e.g. one H200, 16 cores, Python 3.12, torch 2.11+cu130,
# no network), within 8 minutes, writing OUT/gpu_check.json and OUT/gpu_check.md.
#
#   bash benchmarks/gpu_check.sh [--dry-run] [--out DIR] [--data DIR]
#
# Prepare on a networked machine first: bash benchmarks/gpu_check_prepare.sh (the photo set into .gpucheck/data,
# the nvidia-nvjpeg wheel into .whl/), then on the device tool: carry [".whl", ".gpucheck"], command
# "bash benchmarks/gpu_check.sh --out $OUT".
#
# Steps, each under its own time limit (a step that fails or runs out is recorded, the next ones still run):
#   deps     wheels the device lacks (.whl/*.whl -> /tmp/site), the FFmpeg / libjpeg-turbo dev libraries
#   build    the CUDA variant from source (setup.py build_ext --inplace, all cores)
#   tests    tests/cuda (the GPU tests run there, skip here), then compute-sanitizer memcheck and racecheck on
#            tests/cuda/test_gpu.py where the sanitizer works (Firecracker machines; not under gVisor)
#   h2d, overlap, train, scaling, nvjpeg, torchvision_gpu   benchmarks/gpu_check.py parts (see there)
#   report   the JSON and markdown report
# --dry-run: every step that needs a GPU is skipped (recorded as such); scaling runs at 1 and 2 threads on
# 128 photos. That is what runs on the machines without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
OUT_DIR="${OUT:-build/gpu_check}"
DATA=".gpucheck/data"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT_DIR="$2"; shift ;;
    --data) DATA="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT_DIR"
: > "$OUT_DIR/steps.tsv"
# the venv by its real path: a symlinked .venv would change the include paths and rebuild everything
if [ -x .venv/bin/python ]; then PY="$(readlink -f .venv)/bin/python"; else PY=python3; fi
export PYTHONUNBUFFERED=1
T0=$(date +%s)
LOG="$OUT_DIR/gpu_check.log"
: > "$LOG"

step() {  # step NAME TIMEOUT_S COMMAND...: runs it, logs it, records rc and seconds
  local name=$1 limit=$2; shift 2
  local t=$(date +%s)
  echo "== $name (limit ${limit}s, at $((t - T0))s)"
  echo "== $name" >> "$LOG"
  timeout --kill-after=10 "$limit" "$@" >> "$LOG" 2>&1
  local rc=$?
  local note=""
  [ $rc = 124 ] && note="timed out after ${limit}s"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t ))" "$note" >> "$OUT_DIR/steps.tsv"
  tail -n 3 "$LOG"
  return $rc
}
skip() { printf '%s\t-\t0\t%s\n' "$1" "$2" >> "$OUT_DIR/steps.tsv"; echo "== $1 skipped: $2"; }

# -- deps ------------------------------------------------------------------------------------------------
deps() {
  $PY -c "import sys, torch, torchvision; print(sys.version.split()[0], torch.__version__, torchvision.__version__)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  if ls .whl/*.whl >/dev/null 2>&1 && ! $PY -c "import nvidia.cu13" 2>/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
  fi
  for m in libavcodec libavformat libavutil libswscale libswresample libturbojpeg libjpeg; do
    pkg-config --exists $m || { echo "missing $m: the build needs FFmpeg and libjpeg-turbo dev libraries"; return 3; }
  done
}
[ -d /tmp/site ] || mkdir -p /tmp/site
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export PY
export -f deps
step deps 120 bash -c deps
DEPS_RC=$(tail -n 1 "$OUT_DIR/steps.tsv" | cut -f2)

# -- build -----------------------------------------------------------------------------------------------
if [ "$DEPS_RC" = 0 ]; then
  step build 240 env MAX_JOBS="$(nproc)" $PY setup.py -q build_ext --inplace
else
  skip build "dependencies missing (see deps in gpu_check.log)"
fi
BUILT=0
$PY -c "import spdl_torch" >/dev/null 2>&1 && BUILT=1

# -- tests -----------------------------------------------------------------------------------------------
if [ $BUILT = 1 ]; then
  step tests 150 $PY -m pytest -q -rs tests/cuda
  if [ $DRY = 0 ] && command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "sanitizer-$tool" 90 compute-sanitizer --tool $tool --error-exitcode 9 $PY -m pytest -q -x tests/cuda/test_gpu.py
    done
  else
    skip sanitizer "$([ $DRY = 1 ] && echo 'dry run' || echo 'compute-sanitizer not found')"
  fi
else
  skip tests "spdl_torch does not import (no build)"
fi

# -- measurements ----------------------------------------------------------------------------------------
dry_flag=""; [ $DRY = 1 ] && dry_flag="--dry-run"
for part in h2d:30 overlap:45 train:150 scaling:150 nvjpeg:45 torchvision_gpu:45; do
  name=${part%%:*}; limit=${part##*:}
  if [ $BUILT = 0 ] && [ "$name" != h2d ]; then skip "$name" "no build"; continue; fi
  if [ $DRY = 0 ] && [ $(( $(date +%s) - T0 )) -gt 450 ]; then skip "$name" "8-minute budget spent"; continue; fi
  step "$name" "$limit" $PY -m benchmarks.gpu_check part "$name" --root "$DATA" --json "$OUT_DIR/part_$name.json" $dry_flag
done

step report 30 $PY -m benchmarks.gpu_check report --dir "$OUT_DIR"
cat "$OUT_DIR/gpu_check.md" 2>/dev/null | sed -n '1,40p'
echo "gpu_check: $(( $(date +%s) - T0 )) s; reports in $OUT_DIR"
