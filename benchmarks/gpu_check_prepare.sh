#!/usr/bin/env bash
# Prepares what benchmarks/gpu_check.sh carries to the device machine (both folders are git-ignored):
#   .gpucheck/data   N real photos (default 1500) of data/imagenet_like (make demo builds it), ImageFolder layout,
#                    the smallest files first so the set fits the device tool's 64 MiB working tree with the code
#   .whl/            the nvidia-nvjpeg wheel for Python 3.12 (the device has no nvJPEG wheel)
#   bash benchmarks/gpu_check_prepare.sh [N] [MAX_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1500}
MAX_MB=${2:-48}
SRC=data/imagenet_like/train
[ -d "$SRC" ] || { echo "gpu_check_prepare: $SRC missing: run make demo (tools/prepare_data.py) first" >&2; exit 1; }
rm -rf .gpucheck/data && mkdir -p .gpucheck/data/train
list=$(mktemp)
find "$SRC" -name '*.JPEG' -printf '%s %p\n' | sort -n > "$list"
awk -v n="$N" -v max=$((MAX_MB * 1048576)) 'NR > n { exit } { total += $1; if (total > max) exit; print $2 }' "$list" |
  while read -r f; do d=.gpucheck/data/train/$(basename "$(dirname "$f")"); mkdir -p "$d"; cp "$f" "$d/"; done
rm -f "$list"
echo "photos: $(find .gpucheck/data -name '*.JPEG' | wc -l), $(du -sh .gpucheck/data | cut -f1)"
PY=.venv/bin/python; [ -x $PY ] || PY=python3
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl nvidia-nvjpeg==13.0.4.44
ls -la .whl
