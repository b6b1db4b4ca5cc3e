#!/usr/bin/env bash
# The GPU check's rehearsal on a machine without a GPU (make gpu-check-dry), so that what the GPU machine's run
# needs shows up here, before that run:
#   1. benchmarks/gpu_check.sh --dry-run, building from the bundle alone: as root, in a private mount namespace
#      (unshare -m) where the machine's FFmpeg and libjpeg-turbo headers and pkg-config files are hidden under
#      empty files and folders (elsewhere pkg-config is still limited to the bundle, headers stay visible);
#   2. benchmarks/gpu_check_torch_headers.sh: the torch-facing sources against the GPU machine's torch headers.
#   bash benchmarks/gpu_check_rehearse.sh [gpu_check.sh options]      (TORCH_VERSION=2.11.0)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpucheck/prefix ] && [ -d .gpucheck/data ] || bash benchmarks/gpu_check_prepare.sh
HIDE_FILES="/usr/include/jpeglib.h /usr/include/jerror.h /usr/include/jmorecfg.h /usr/include/jpegint.h
  /usr/include/turbojpeg.h /usr/include/x86_64-linux-gnu/jconfig.h"
HIDE_DIRS="/usr/include/x86_64-linux-gnu/libavcodec /usr/include/x86_64-linux-gnu/libavformat
  /usr/include/x86_64-linux-gnu/libavutil /usr/include/x86_64-linux-gnu/libswscale
  /usr/include/x86_64-linux-gnu/libswresample /usr/lib/x86_64-linux-gnu/pkgconfig /usr/share/pkgconfig"
export HIDE_FILES HIDE_DIRS
# the in-place build's python path: with ccache, the files whose preprocessed text matches come from its cache
[ -x .venv/bin/python ] && export PY="$PWD/.venv/bin/python"
rc=0
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  unshare -m bash -c '
    empty_dir=$(mktemp -d); empty_file=$(mktemp)
    for f in $HIDE_FILES; do [ -e "$f" ] && mount --bind "$empty_file" "$f"; done
    for d in $HIDE_DIRS; do [ -d "$d" ] && mount --bind "$empty_dir" "$d"; done
    echo "hidden: $(for f in $HIDE_FILES $HIDE_DIRS; do [ -e "$f" ] && printf "%s " "$f"; done)"
    exec bash benchmarks/gpu_check.sh --dry-run "$@"' _ "$@" || rc=$?
else
  echo "gpu_check_rehearse: not root or no unshare: the machine's headers stay visible (pkg-config sees the bundle only)"
  bash benchmarks/gpu_check.sh --dry-run "$@" || rc=$?
fi
bash benchmarks/gpu_check_torch_headers.sh "${TORCH_VERSION:-2.11.0}" || rc=$?
exit $rc
