#!/usr/bin/env bash
# Compile-only check of the extension's torch-facing sources (csrc/ops, csrc/cuda) against another torch's
# headers, without installing or importing that torch: the GPU machine's torch (2.11) vs the one here.
#   bash benchmarks/gpu_check_torch_headers.sh [VERSION]     (default 2.11.0; JOBS=N runs N compilers)
# The wheel is fetched once with `pip download torch==VERSION --no-deps`; only torch/include and
# torch/utils/cpp_extension.py (for its C++ standard) are kept, under build/torch-VERSION. Both builds are
# checked: with FFmpeg (every file) and without (-DSPDL_TORCH_NO_FFMPEG: the files that differ). g++ -fsyntax-only.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-2.11.0}
DIR=build/torch-$VERSION
PY=.venv/bin/python; [ -x $PY ] || PY=python3
if [ ! -f "$DIR/torch/utils/cpp_extension.py" ]; then
  rm -rf "$DIR" && mkdir -p "$DIR/whl"
  $PY -m pip download -q torch=="$VERSION" --no-deps --only-binary=:all: -d "$DIR/whl"
  $PY - "$DIR" <<'PY'
import glob, sys, zipfile
out = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{out}/whl/torch-*.whl")[0]) as z:
    z.extractall(out, [n for n in z.namelist() if n.startswith("torch/include/") or n == "torch/utils/cpp_extension.py"])
PY
  rm -rf "$DIR/whl"
fi
INC="$DIR/torch/include"
grep -rqs "define TORCH_VERSION_MINOR $(echo "$VERSION" | cut -d. -f2)$" "$INC/torch/headeronly/version.h" \
  "$INC/torch/csrc/api/include/torch/version.h" ||
  { echo "gpu_check_torch_headers: $INC is not torch $VERSION" >&2; exit 1; }
# the C++ standard that torch's cpp_extension passes (the one its code names most often)
STD=$(grep -o -- "'-std=c++[0-9]*'" "$DIR/torch/utils/cpp_extension.py" | sort | uniq -c | sort -rn | head -n 1 | tr -d "' " | sed 's/^[0-9]*//')
STD=${STD:--std=c++17}
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
NVJPEG_INC=$($PY -c "import glob, sys; print(next(iter(sorted(glob.glob(p + '/nvidia/cu13/include') for p in sys.path if glob.glob(p + '/nvidia/cu13/include/nvjpeg.h'))), [''])[0])")
FLAGS=("$STD" -fsyntax-only -Wall -Wextra -Icsrc -isystem "$INC" -isystem "$INC/torch/csrc/api/include"
       -isystem "$CUDA_INC" $(pkg-config --cflags libturbojpeg libjpeg) -DTORCH_API_INCLUDE_EXTENSION_H
       -DTORCH_EXTENSION_NAME=_C -DSPDL_TORCH_WITH_CUDA=1)
[ -n "$NVJPEG_INC" ] && FLAGS+=(-isystem "$NVJPEG_INC" -DSPDL_TORCH_WITH_NVJPEG=1)
echo "torch $VERSION headers ($INC), $STD, CUDA headers $CUDA_INC, nvJPEG ${NVJPEG_INC:-absent}"
ERRS=$(mktemp -d); trap 'rm -rf "$ERRS"' EXIT
check() {  # check DEFINE FILE...: each file through g++ -fsyntax-only, JOBS at a time; the first failure stops it
  local define=$1; shift
  printf '%s\n' "$@" | xargs -P "${JOBS:-1}" -I{} sh -c \
    'err="$1/$(echo {} | tr / _)"; shift; g++ "$@" {} 2> "$err" || { echo "FAILED {}"; cat "$err"; exit 255; }' \
    _ "$ERRS" "${FLAGS[@]}" $define
}
T0=$(date +%s)
mapfile -t ALL < <(ls csrc/ops/*.cpp csrc/cuda/*.cpp)
check "" "${ALL[@]}"
mapfile -t VARIANT < <(grep -l "SPDL_TORCH_NO_FFMPEG\|core/features.h" "${ALL[@]}")
check -DSPDL_TORCH_NO_FFMPEG=1 "${VARIANT[@]}"
echo "torch $VERSION: ${#ALL[@]} files with FFmpeg + ${#VARIANT[@]} without compile ($(( $(date +%s) - T0 )) s)"
