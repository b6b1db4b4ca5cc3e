"""The native code's include convention: every project include is rooted at ``csrc/``
(``#include "core/detail/jpeg/jpeg_decoder.h"``), never relative to the including file (no ``../``).

    python -m tools.csrc_includes --check   # list includes that break the convention (tests/project/test_structure.py)
    python -m tools.csrc_includes --fix     # rewrite them in place

``--fix`` resolves a quoted include the way the compiler did before (beside the including file, then from
``csrc/``) and writes it rooted at ``csrc/``. ``MOVED`` maps files that once lived elsewhere in ``csrc/`` to
where they are now, so an include of an old location (code written before a move) is rewritten to the
new one; ``--fix --move`` also performs those moves with ``git mv`` where the old file still exists.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

CSRC = Path(__file__).resolve().parent.parent / "csrc"
SUFFIXES = {".h", ".cpp", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^(\s*#\s*include\s+)"([^"]+)"', re.M)

# old path -> new path, both relative to csrc/: core/detail/ grouped by concern.
_GROUPS = {
    "ffmpeg": ["audio_resampler.cpp", "audio_resampler.h", "audio_stream.cpp", "audio_stream.h", "avio_memory.cpp",
               "avio_memory.h", "demux.cpp", "demux.h", "ffmpeg_image_decoder.cpp", "ffmpeg_image_decoder.h",
               "ffmpeg_utils.cpp", "ffmpeg_utils.h", "frame_reader.cpp", "frame_reader.h", "video_convert.cpp",
               "video_convert.h", "video_index.cpp", "video_index.h", "video_metadata.cpp", "video_metadata.h"],
    "jpeg": ["jpeg_decoder.cpp", "jpeg_decoder.h", "jpeg_markers.cpp", "jpeg_markers.h", "jpeg_region_decoder.cpp",
             "jpeg_region_decoder.h", "jpeg_types.h", "libjpeg_session.cpp", "libjpeg_session.h"],
    "parse": ["gif_frame.cpp", "gif_frame.h", "image_chunks.cpp", "image_chunks.h", "image_format.cpp",
              "image_format.h", "ogg_pages.cpp", "ogg_pages.h", "tiff_ifd.cpp", "tiff_ifd.h"],
    "pixels": ["orientation.cpp", "orientation.h", "pixel_convert.cpp", "pixel_convert.h", "pixel_limit.cpp",
               "pixel_limit.h", "resample_avx2.cpp", "resample_avx2.h", "resample_generic.cpp",
               "resample_slot_writer.cpp", "resample_slot_writer.h"],
}
MOVED = {f"core/detail/{name}": f"core/detail/{group}/{name}" for group, names in _GROUPS.items() for name in names}


def sources(root=CSRC):
    return sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())


def _resolve(path, target, root):
    """The include's file relative to root (after MOVED), or None when it is not a project file."""
    bases = [path.parent]
    here = path.resolve().relative_to(root).as_posix()
    old = next((o for o, n in MOVED.items() if n == here), None)
    if old is not None:  # an include written beside the file's old location
        bases.append((root / old).parent)
    for base in bases + [root]:
        candidate = (base / target).resolve()
        try:
            rel = candidate.relative_to(root).as_posix()
        except ValueError:
            continue
        rel = MOVED.get(rel, rel)
        if (root / rel).exists():
            return rel
    return None


def rewrites(path, root=CSRC):
    """[(old include, new include)] of one file's quoted includes that are not rooted at csrc/."""
    text = path.read_text()
    out = []
    for match in INCLUDE.finditer(text):
        target = match.group(2)
        rel = _resolve(path, target, root)
        if rel is not None and rel != target:
            out.append((target, rel))
    return out


def _sort_runs(text):
    """Sorts each run of consecutive quoted-include lines (the order .clang-format keeps)."""
    lines, out, run = text.split("\n"), [], []
    for line in lines + [None]:
        if line is not None and INCLUDE.match(line):
            run.append(line)
            continue
        out += sorted(run, key=lambda ln: INCLUDE.match(ln).group(2))
        run = []
        if line is not None:
            out.append(line)
    return "\n".join(out)


def fix(path, root=CSRC):
    text = path.read_text()

    def repl(match):
        rel = _resolve(path, match.group(2), root)
        return f'{match.group(1)}"{rel}"' if rel is not None else match.group(0)

    new = _sort_runs(INCLUDE.sub(repl, text))
    if new != text:
        path.write_text(new)
        return True
    return False


def move(root=CSRC):
    for old, new in MOVED.items():
        if (root / old).exists() and not (root / new).exists():
            (root / new).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", str(root / old), str(root / new)], check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list includes not rooted at csrc/ (exit 1 if any)")
    parser.add_argument("--fix", action="store_true", help="rewrite them rooted at csrc/")
    parser.add_argument("--move", action="store_true", help="with --fix: first git mv the files in MOVED")
    args = parser.parse_args()
    if args.fix:
        if args.move:
            move()
        changed = [p for p in sources() if fix(p)]
        print(f"rewrote the includes of {len(changed)} files")
    bad = [(p, old, new) for p in sources() for old, new in rewrites(p)]
    for p, old, new in bad:
        print(f"{p.relative_to(CSRC.parent)}: \"{old}\" -> \"{new}\"")
    return 1 if bad and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
