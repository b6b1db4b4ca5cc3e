#!/usr/bin/env bash
# The GPU check: one command on a GPU machine (e.g. one H200, 16 cores, Python 3.12, torch 2.11+cu130, no
# network, no FFmpeg or libjpeg-turbo headers), within 9 minutes, writing OUT/gpu_check.json and OUT/gpu_check.md.
#
#   bash benchmarks/gpu_check.sh [--dry-run] [--out DIR] [--data DIR] [--build-dir DIR] [--budget S]
#
# Prepare on a networked machine first: bash benchmarks/gpu_check_prepare.sh (photos into .gpucheck/data,
# libjpeg-turbo into .gpucheck/prefix, wheels into .whl/: the bundle); copy the tree with .gpucheck/ and .whl/ to
# the GPU machine and run "bash benchmarks/gpu_check.sh --out DIR" there. It builds the variant without FFmpeg
# (SPDL_TORCH_FFMPEG=0) against the bundle's libjpeg-turbo only, out of the tree (--build-dir), loaded through
# SPDL_TORCH_LIBRARY.
#
# Steps, each under its own time limit, cut to what is left of --budget (default 520 s): a step that fails or
# runs out is recorded and the next ones still run; one that no longer fits is skipped, saying so.
#   deps     versions, the bundle's wheels the machine lacks (-> /tmp/site), the bundle's libjpeg-turbo
#   build    the CUDA variant without FFmpeg, all cores
#   headers  the build read libjpeg-turbo's headers from the bundle, no FFmpeg header; the library loads the
#            bundle's libjpeg-turbo (its RUNPATH) and no FFmpeg
#   tests    the CUDA tests (GPU_TESTS: tests/cuda and the cuda-marked files elsewhere) and
#            tests/project/test_no_ffmpeg.py (the GPU tests run there, skip here)
#   h2d, overlap, nvjpeg, torchvision_gpu, train, scaling   benchmarks/gpu_check.py parts (see there)
#   sanitizer-memcheck, sanitizer-racecheck   compute-sanitizer on the cuda-marked tests, if time is left
#   report   the JSON and markdown report
# --dry-run: every step that needs a GPU is skipped (recorded as such); scaling runs at 1 and 2 threads on
# 128 photos. `make gpu-check-dry` runs it here with the system's FFmpeg and libjpeg headers hidden.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
OUT_DIR="${OUT:-build/gpu_check}"
DATA=".gpucheck/data"
BUILD="build/gpu_check_build"
BUDGET=520
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT_DIR="$2"; shift ;;
    --data) DATA="$2"; shift ;;
    --build-dir) BUILD="$2"; shift ;;
    --budget) BUDGET="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT_DIR"
: > "$OUT_DIR/steps.tsv"
# PY from the caller (the rehearsal passes the in-place build's, so ccache sees the same include paths), else the
# venv by its real path, else the machine's python3
if [ -z "${PY:-}" ]; then
  if [ -x .venv/bin/python ]; then PY="$(readlink -f .venv)/bin/python"; else PY=python3; fi
fi
export PYTHONUNBUFFERED=1
T0=$(date +%s)
LOG="$OUT_DIR/gpu_check.log"
: > "$LOG"

left() { echo $(( BUDGET - ($(date +%s) - T0) )); }

step() {  # step NAME TIMEOUT_S COMMAND...: runs it within what is left of the budget, logs it, records rc and s
  local name=$1 limit=$2; shift 2
  local rest=$(( $(left) - 15 ))  # 15 s kept for the report
  if [ "$name" != report ] && [ $rest -lt 20 ]; then skip "$name" "budget of ${BUDGET}s spent"; return 1; fi
  [ "$name" != report ] && [ $rest -lt $limit ] && limit=$rest
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
last_rc() { tail -n 1 "$OUT_DIR/steps.tsv" | cut -f2; }

# -- the bundle's environment ----------------------------------------------------------------------------
PREFIX="$PWD/.gpucheck/prefix"
export PKG_CONFIG_LIBDIR="$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig" PKG_CONFIG_PATH=""
mkdir -p /tmp/site /tmp/gpu_check_bin
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
if ! command -v pkg-config >/dev/null; then  # the bundle's pkgconf, run through the loader (no exec bit needed)
  printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path "%s" "%s" "$@"\n' \
    "$PREFIX/usr/lib/x86_64-linux-gnu" "$PREFIX/usr/bin/pkgconf" > /tmp/gpu_check_bin/pkg-config
  chmod +x /tmp/gpu_check_bin/pkg-config
  export PATH="/tmp/gpu_check_bin:$PATH"
fi
export PY

# -- deps ------------------------------------------------------------------------------------------------
deps() {
  $PY -c "import sys, torch, torchvision; print(sys.version.split()[0], torch.__version__, torchvision.__version__)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  for whl in .whl/*.whl; do
    [ -e "$whl" ] || continue
    name=$(basename "$whl" | cut -d- -f1)
    case "$name" in
      nvidia_nvjpeg) $PY -c "import glob, sys; sys.exit(not any(glob.glob(p + '/nvidia/cu13/include/nvjpeg.h') for p in sys.path))" && continue ;;
      *) $PY -c "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)" "$name" && continue ;;
    esac
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$whl" || return 1
    echo "installed $(basename "$whl")"
  done
  for m in libturbojpeg libjpeg; do
    pkg-config --exists $m || { echo "missing $m in $PKG_CONFIG_LIBDIR: run benchmarks/gpu_check_prepare.sh"; return 3; }
    echo "$m $(pkg-config --modversion $m): $(pkg-config --cflags --libs $m)"
  done
}
export -f deps
step deps 90 bash -c deps
DEPS_RC=$(last_rc)

# -- build -----------------------------------------------------------------------------------------------
if [ "$DEPS_RC" = 0 ]; then
  step build 330 env SPDL_TORCH_FFMPEG=0 MAX_JOBS="${MAX_JOBS:-$(nproc)}" $PY setup.py -q build_ext --build-temp "$BUILD" \
    --build-lib "$BUILD/lib"
else
  skip build "dependencies missing (see deps in gpu_check.log)"
fi
lib=$(ls "$BUILD"/lib/spdl_torch/_C*.so 2>/dev/null | head -n 1)
BUILT=0
if [ -n "$lib" ]; then
  export SPDL_TORCH_LIBRARY="$(readlink -f "$lib")"
  $PY -c "import spdl_torch; print(spdl_torch.build_info())" >> "$LOG" 2>&1 && BUILT=1
fi

# -- headers: the build read libjpeg-turbo's headers from the bundle and no FFmpeg header ----------------------
# (ninja's dependency log lists the headers of -I folders, not the system's: `make gpu-check-dry` hides those.)
headers() {
  local ninja deps_list
  ninja=$(command -v ninja || $PY -c "import ninja, os; print(os.path.join(ninja.BIN_DIR, 'ninja'))")
  deps_list=$(cd "$BUILD" && "$ninja" -t deps | grep -E '^ +\S+\.(h|hpp)$' | sed 's/^ *//' | sort -u | xargs -r realpath -m)
  [ -n "$deps_list" ] || { echo "no dependency log in $BUILD (ninja -t deps)"; return 1; }
  echo "$(echo "$deps_list" | wc -l) headers in ninja's dependency log"
  local ffmpeg carried
  ffmpeg=$(echo "$deps_list" | grep -E '/lib(avcodec|avformat|avutil|swscale|swresample)/' || true)
  [ -z "$ffmpeg" ] || { echo "FFmpeg headers in a build without FFmpeg:"; echo "$ffmpeg"; return 1; }
  carried=$(echo "$deps_list" | grep "^$PREFIX/" | grep -cE '/(jpeglib|turbojpeg)\.h$')
  [ "$carried" -ge 2 ] || { echo "jpeglib.h / turbojpeg.h not read from $PREFIX"; return 1; }
  echo "jpeglib.h and turbojpeg.h from $PREFIX; no FFmpeg header"
  local resolved
  resolved=$(ldd "$lib" | grep -E 'lib(turbo)?jpeg|libav|libsw')
  echo "$resolved"
  if echo "$resolved" | grep -v "$PREFIX/" | grep -q .; then echo "libraries from outside the bundle"; return 1; fi
}
export -f headers; export BUILD PREFIX lib
if [ -n "$lib" ]; then step headers 20 bash -c headers; else skip headers "no build"; fi

# -- tests -----------------------------------------------------------------------------------------------
# The files that hold the cuda-marked tests (each module's GPU checks sit with its other tests).
GPU_TESTS="tests/cuda tests/io/test_cuda_batch.py tests/dataloader/test_device.py"
if [ $BUILT = 1 ]; then
  step tests 150 $PY -m pytest -q -rs -p no:cacheprovider $GPU_TESTS tests/project/test_no_ffmpeg.py
else
  skip tests "spdl_torch does not import (no build)"
fi

# -- measurements ----------------------------------------------------------------------------------------
dry_flag=""; [ $DRY = 1 ] && dry_flag="--dry-run"
for part in h2d:30 overlap:45 nvjpeg:60 torchvision_gpu:60 train:150 scaling:120; do
  name=${part%%:*}; limit=${part##*:}
  if [ $BUILT = 0 ] && [ "$name" != h2d ]; then skip "$name" "no build"; continue; fi
  step "$name" "$limit" $PY -m benchmarks.gpu_check part "$name" --root "$DATA" --json "$OUT_DIR/part_$name.json" $dry_flag
done

# -- compute-sanitizer, with what is left ---------------------------------------------------------------
if [ $BUILT = 1 ] && [ $DRY = 0 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    step "sanitizer-$tool" 90 compute-sanitizer --tool $tool --error-exitcode 9 $PY -m pytest -q -x -p no:cacheprovider \
      -m cuda $GPU_TESTS
  done
else
  skip sanitizer "$([ $DRY = 1 ] && echo 'dry run' || echo 'no build or compute-sanitizer not found')"
fi

step report 30 $PY -m benchmarks.gpu_check report --dir "$OUT_DIR"
sed -n '1,40p' "$OUT_DIR/gpu_check.md" 2>/dev/null
failed=$(awk -F'\t' '$2 != "0" && $2 != "-" {printf "%s ", $1}' "$OUT_DIR/steps.tsv")
echo "gpu_check: $(( $(date +%s) - T0 )) s; reports in $OUT_DIR${failed:+; FAILED: $failed}"
[ -z "$failed" ]
