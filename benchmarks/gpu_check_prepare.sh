#!/usr/bin/env bash
# Prepares the bundle benchmarks/gpu_check.sh needs on a GPU machine without network (both folders are git-ignored):
#   .gpucheck/data     N real photos (default 1000: the CPU scaling part decodes 1000) of data/imagenet_like
#                      (make demo builds it), ImageFolder layout, picked evenly over the size order so the set
#                      keeps the full set's size spread, within MAX_MB
#   .gpucheck/prefix   libjpeg-turbo's -dev and runtime packages (and pkgconf, for a machine without pkg-config),
#                      `apt-get download`ed and unpacked with `dpkg -x`; the .pc files are made relocatable
#                      (prefix=${pcfiledir}/...), so PKG_CONFIG_LIBDIR=.gpucheck/prefix/usr/lib/x86_64-linux-gnu/pkgconfig
#                      finds them wherever the tree lands. Static archives, docs and cmake files are left out.
#   .whl/              wheels for Python 3.12 the GPU machine may lack: nvidia-nvjpeg; pytest, psutil, setuptools (+ their
#                      dependencies) for the tests and measurements (gpu_check.sh installs only the missing ones)
# The GPU machine builds the variant without FFmpeg (SPDL_TORCH_FFMPEG=0): FFmpeg's libraries would not fit.
# Prints the total of everything that is copied (tracked and untracked-not-ignored files + the bundle) and fails
# over LIMIT_MB (60).
#   bash benchmarks/gpu_check_prepare.sh [N] [MAX_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
MAX_MB=${2:-50}
LIMIT_MB=${LIMIT_MB:-60}
SRC=data/imagenet_like/train
PREFIX=.gpucheck/prefix
JPEG_DEBS="libturbojpeg0 libturbojpeg0-dev libjpeg62-turbo libjpeg62-turbo-dev"
PKGCONF_DEBS="pkgconf-bin libpkgconf3"
[ -d "$SRC" ] || { echo "gpu_check_prepare: $SRC missing: run make demo (tools/prepare_data.py) first" >&2; exit 1; }

# -- photos ------------------------------------------------------------------------------------------------
rm -rf .gpucheck/data && mkdir -p .gpucheck/data/train
list=$(mktemp)
find -L "$SRC" -name '*.JPEG' -printf '%s %p\n' | sort -n > "$list"
total=$(wc -l < "$list")
# every (total/N)-th file in size order, then the byte budget (smallest first among those picked)
awk -v n="$N" -v total="$total" -v max=$((MAX_MB * 1048576)) '
  BEGIN { step = total > n ? total / n : 1; next_pick = 0 }
  NR - 1 >= next_pick && picked < n { sizes[++picked] = $1; paths[picked] = $2; next_pick += step }
  END { for (i = 1; i <= picked; i++) { used += sizes[i]; if (used > max) break; print paths[i] } }' "$list" |
  while read -r f; do d=.gpucheck/data/train/$(basename "$(dirname "$f")"); mkdir -p "$d"; cp "$f" "$d/"; done
rm -f "$list"
echo "photos: $(find .gpucheck/data -name '*.JPEG' | wc -l) of $total, $(du -sh .gpucheck/data | cut -f1)"

# -- libjpeg-turbo (+ pkgconf) as an unpacked prefix --------------------------------------------------------
rm -rf "$PREFIX" .gpucheck/debs && mkdir -p "$PREFIX" .gpucheck/debs
(cd .gpucheck/debs && apt-get download -q -o APT::Sandbox::User=root $JPEG_DEBS $PKGCONF_DEBS >/dev/null)
for deb in .gpucheck/debs/*.deb; do dpkg -x "$deb" "$PREFIX"; done
rm -rf .gpucheck/debs "$PREFIX"/usr/share "$PREFIX"/usr/lib/x86_64-linux-gnu/cmake "$PREFIX"/usr/lib/x86_64-linux-gnu/*.a
PCDIR="$PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig"
for pc in "$PCDIR"/*.pc; do
  # relocatable: prefix from the .pc file's own place; jconfig.h lives in the multiarch include folder
  sed -i -e 's|^prefix=.*|prefix=${pcfiledir}/../../..|' -e 's|^exec_prefix=.*|exec_prefix=${prefix}|' \
    -e 's|^libdir=.*|libdir=${prefix}/lib/x86_64-linux-gnu|' -e 's|^includedir=.*|includedir=${prefix}/include|' \
    -e 's|^Cflags: .*|Cflags: -I${includedir} -I${includedir}/x86_64-linux-gnu|' "$pc"
done
# Plain files, no symbolic links (a copy to the GPU machine may drop links): the link-time and the run-time names are copies.
find "$PREFIX" -type l | while read -r link; do cp --remove-destination "$(readlink -f "$link")" "$link"; done
find "$PREFIX" -name '*.so.*.*' -delete
# the bundle's pkgconf as gpu_check.sh runs it on a machine without pkg-config: through the loader
pkgconf() { /lib64/ld-linux-x86-64.so.2 --library-path "$PREFIX/usr/lib/x86_64-linux-gnu" "$PREFIX/usr/bin/pkgconf" "$@"; }
for m in libturbojpeg libjpeg; do
  PKG_CONFIG_LIBDIR="$PCDIR" PKG_CONFIG_PATH="" pkgconf --exists $m ||
    { echo "gpu_check_prepare: $m not found in $PCDIR" >&2; exit 1; }
done
echo "libjpeg-turbo prefix: $(PKG_CONFIG_LIBDIR="$PCDIR" pkgconf --modversion libturbojpeg), $(du -sh "$PREFIX" | cut -f1)"

# -- wheels ------------------------------------------------------------------------------------------------
PY=.venv/bin/python; [ -x $PY ] || PY=python3
rm -rf .whl && mkdir -p .whl
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl nvidia-nvjpeg==13.0.4.44
$PY -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl pytest psutil setuptools
ls -la .whl

# -- what is copied ----------------------------------------------------------------------------------------
tree_bytes=$(git ls-files -z -co --exclude-standard | xargs -0 stat -L -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
carry_bytes=$(du -sbL .gpucheck .whl | awk '{s += $1} END {print s}')
all=$((tree_bytes + carry_bytes))
printf 'to copy: tree %.1f MiB + bundle %.1f MiB (.gpucheck, .whl) = %.1f MiB (limit %s MiB)\n' \
  "$(echo "$tree_bytes / 1048576" | bc -l)" "$(echo "$carry_bytes / 1048576" | bc -l)" \
  "$(echo "$all / 1048576" | bc -l)" "$LIMIT_MB"
[ "$all" -le $((LIMIT_MB * 1048576)) ] || { echo "gpu_check_prepare: over ${LIMIT_MB} MiB" >&2; exit 1; }
