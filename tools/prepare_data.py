"""Build an ImageNet-like image folder from real photographs shipped in Debian packages.

Usage::

    python -m tools.prepare_data --out data/imagenet_like [--num-images 2000] [--seed 0]
        [--quality 90] [--cache data/.debs]
    python -m tools.prepare_data --out data/imagenet_hires --variant hires   # 320 images, >= 1500 px

The packages are fetched with ``apt-get download`` into a cache folder and unpacked there with
``dpkg-deb -x``; nothing is installed. Packages the running Debian release lacks are skipped with a note.

The output is ``OUT/train/<class>/<class>_<index>.JPEG`` (torchvision ``ImageFolder`` layout) plus
``OUT/manifest.json``:

* Most images are random crops of high-resolution wallpaper photographs (one class per photograph):
  random position, aspect ratio in [3/4, 4/3], area in [10 %, 100 %] of the photograph, downscaled with
  Pillow's antialiased Lanczos filter so that the shorter side is 300-500 px, and saved as baseline RGB
  JPEG with 4:2:0 chroma subsampling, like ImageNet.
* The rest (at most 10 %) are photographs of about 500 px (one class per source group), kept as they are
  when already baseline 4:2:0 RGB JPEG, re-encoded otherwise.

``--variant hires`` (or ``--short-side MIN MAX``) builds a high-resolution variant instead: only crops of the
wallpapers whose shorter side is at least MIN, with a shorter side of MIN-MAX px (hires: 1500-2000, 320
images by default) and no small photographs. Decoding then dominates, and JPEG DCT-domain scaling matters.

A seed fixes everything: the same seed and the same packages give byte-identical files. A second call
with the same parameters finds the manifest and returns at once.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, JpegImagePlugin
from tqdm import tqdm

__all__ = ["prepare", "fetch_packages", "crop_box", "main"]

# Bump when the output for given parameters changes, so that old folders are rebuilt.
FORMAT_VERSION = 1
SHORT_SIDE_PX = (300, 500)  # shorter side of a crop, inclusive range
ASPECT_RANGE = (3 / 4, 4 / 3)  # width / height of a crop
AREA_RANGE = (0.1, 1.0)  # crop area as a fraction of the photograph's area
HIRES_MIN_SIDE_PX = 1000  # wallpapers with a shorter side below this are not used
PHOTO_MIN_SIDE_PX = 200  # smaller files are icons or thumbnails, not photographs
MAX_AS_IS_FRACTION = 0.1  # at most this share of the output are photographs kept as they are
MANIFEST = "manifest.json"
HIRES_SHORT_SIDE_PX = (1500, 2000)  # --variant hires: shorter side of a crop
HIRES_NUM_IMAGES = 320  # --variant hires: default number of images


@dataclass(frozen=True)
class Source:
    """A group of photographs inside one Debian package.

    ``pattern`` is a path inside the package; ``{name}`` matches one file or folder name, which names the
    photograph, ``*`` matches anything within one path component. ``packages`` are alternatives for
    different Debian releases; the first one available is used. ``include`` / ``exclude`` are fnmatch
    patterns on the name (drawings and renderings are excluded by hand). A ``hires`` source gives one
    class per photograph (``<label>_<name>``) and is cut into crops; otherwise the whole source is the
    class ``<label>`` and its photographs are kept as they are.
    """

    packages: tuple[str, ...]
    pattern: str
    label: str
    hires: bool
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()


SOURCES = (
    Source(("mate-backgrounds",), "usr/share/backgrounds/mate/nature/{name}.jpg", "mate", True),
    Source(("lomiri-wallpapers-16.04",), "usr/share/backgrounds/{name}_by_*.jpg", "lomiri", True,
           exclude=("analogpattern", "umang")),
    Source(("lomiri-wallpapers-20.04",), "usr/share/backgrounds/{name}_by_*.jpg", "lomiri", True,
           include=("Kleiber",)),
    Source(("plasma-workspace-wallpapers",), "usr/share/wallpapers/{name}/contents/images/*.jpg", "plasma",
           True, include=("BytheWater", "ColdRipple", "ColorfulCups", "DarkestHour", "EveningGlow",
                          "FallenLeaf", "Grey", "OneStandsOut", "Path", "summer_1am")),
    Source(("budgie-backgrounds",), "usr/share/backgrounds/budgie/{name}.jpg", "budgie", True,
           exclude=("abstract-*", "accelerated-green", "geo-forest", "valley-*", "waves-*", "temp*")),
    Source(("kphotoalbum",), "usr/share/kphotoalbum/demo/{name}.jpg", "kphotoalbum", False),
    Source(("libdlib19.2", "libdlib19.1"), "usr/share/doc/libdlib19.*/examples/faces/{name}.jpg",
           "dlib_faces", False, exclude=("bald_guys", "dogs")),
    Source(("darknet",), "usr/share/darknet/data/{name}.jpg", "darknet", False, exclude=("scream",)),
    Source(("scratch",), "usr/share/scratch/Media/Backgrounds/Nature/{name}.jpg", "scratch_nature", False,
           exclude=("woods-and-bench",)),
    *(Source(("scratch",), f"usr/share/scratch/Media/Backgrounds/{folder}/{{name}}.jpg", "scratch_places",
             False, exclude=("chalkboard", "party-room", "room?", "spotlight-stage", "school2", "brick-wall1"))
      for folder in ("Indoors", "Outdoors", "Sports")),
)


def _note(msg: str) -> None:
    print(f"note: {msg}", file=sys.stderr)


def _in_apt(pkg: str) -> bool:
    """Whether the apt lists of the running release know ``pkg``."""
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                         capture_output=True, text=True).stdout
    return re.search(r"^Version: ", out, re.M) is not None


def _cached_deb(cache: Path, pkg: str) -> Path | None:
    debs = sorted(cache.glob(f"{glob.escape(pkg)}_*.deb"))
    return debs[-1] if debs else None


def fetch_packages(packages: list[str], cache: Path) -> dict[str, Path]:
    """Download (``apt-get download``) and unpack (``dpkg-deb -x``) Debian packages, without installing.

    Args:
        packages: package names; names the running release lacks are skipped with a note.
        cache: folder for the ``.deb`` files; each package is unpacked into ``cache/x/<package>``.
            Packages already there are neither downloaded nor unpacked again.

    Returns:
        package name -> path of its ``.deb`` file, for the packages that are available.
    """
    cache.mkdir(parents=True, exist_ok=True)
    debs = {p: d for p in packages if (d := _cached_deb(cache, p))}
    missing = [p for p in packages if p not in debs]
    if missing:
        found = {p for p in missing if _in_apt(p)}
        if not found and not debs:  # empty apt lists, as on a fresh container
            _note("apt-cache knows none of the packages; running apt-get update")
            subprocess.run(["apt-get", "update", "-qq"], check=False)
            found = {p for p in missing if _in_apt(p)}
        for p in missing:
            if p not in found:
                _note(f"skipping {p}: not in this Debian release")
        todo = sorted(found)
        if todo:
            print(f"downloading {len(todo)} packages into {cache}: {' '.join(todo)}", file=sys.stderr)
            # apt-get download fails as a whole if one package fails; then retry one by one.
            if subprocess.run(["apt-get", "download", *todo], cwd=cache, capture_output=True).returncode:
                for p in todo:
                    r = subprocess.run(["apt-get", "download", p], cwd=cache, capture_output=True, text=True)
                    if r.returncode:
                        _note(f"skipping {p}: download failed: {r.stderr.strip()}")
        debs.update({p: d for p in todo if (d := _cached_deb(cache, p))})
    for pkg, deb in debs.items():
        root = cache / "x" / pkg
        done = root / ".unpacked"
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            done.write_text(deb.name)
    return debs


def _find_photos(src: Source, root: Path, hires_min_side: int = HIRES_MIN_SIDE_PX) -> list[tuple[str, Path]]:
    """(name, path) of the photographs of ``src`` under the unpacked package ``root``, sorted by name.

    For a name with several files (a wallpaper in several resolutions) only the largest is kept. Files
    that Pillow cannot open, symlinks and files with a shorter side below the minimum are skipped.
    """
    regex = re.compile(re.escape(src.pattern).replace(r"\{name\}", "(?P<name>[^/]+?)")
                       .replace(r"\*", "[^/]*") + "$")
    min_side = hires_min_side if src.hires else PHOTO_MIN_SIDE_PX
    best: dict[str, tuple[int, Path]] = {}
    for path in sorted(root.glob(src.pattern.replace("{name}", "*"))):
        rel = path.relative_to(root).as_posix()
        name = regex.match(rel).group("name")
        if (path.is_symlink() or not any(fnmatch.fnmatchcase(name, p) for p in src.include)
                or any(fnmatch.fnmatchcase(name, p) for p in src.exclude)):
            continue
        try:
            with Image.open(path) as im:
                im.verify()
                w, h = im.size
        except Exception as e:  # noqa: BLE001 - any unreadable file is skipped
            _note(f"skipping {rel}: {e}")
            continue
        if min(w, h) >= min_side and w * h > best.get(name, (0, path))[0]:
            best[name] = (w * h, path)
    return [(name, best[name][1]) for name in sorted(best)]


def _class_name(label: str, name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", f"{label}_{name}".lower()).strip("_")


def crop_box(rng: random.Random, width: int, height: int, short_side: int) -> tuple[int, int, int, int]:
    """Random crop box (left, upper, right, lower) in pixels, like torchvision's RandomResizedCrop.

    The box covers ``AREA_RANGE`` of the ``width`` x ``height`` image (uniform), has an aspect ratio in
    ``ASPECT_RANGE`` (log-uniform) and a shorter side of at least ``short_side`` pixels (so the crop is
    only ever downscaled), and lies at a uniformly random position inside the image.
    """
    area = rng.uniform(*AREA_RANGE) * width * height
    ratio = math.exp(rng.uniform(math.log(ASPECT_RANGE[0]), math.log(ASPECT_RANGE[1])))
    w, h = (area * ratio) ** 0.5, (area / ratio) ** 0.5
    shrink = min(1.0, width / w, height / h)  # fit inside the image
    w, h = w * shrink, h * shrink
    grow = max(1.0, short_side / min(w, h))  # never upscale
    w, h = min(width, round(w * grow)), min(height, round(h * grow))
    x, y = rng.randint(0, width - w), rng.randint(0, height - h)
    return x, y, x + w, y + h


def _save_jpeg(im: Image.Image, path: Path, quality: int) -> None:
    im.convert("RGB").save(path, "JPEG", quality=quality, subsampling="4:2:0")


def _make_crops(src: Path, cls: str, count: int, key: str, out: Path, quality: int,
                short_range: tuple[int, int] = SHORT_SIDE_PX) -> list[tuple[int, int]]:
    """Write ``count`` random crops of the photograph ``src`` as ``out/cls/cls_<i>.JPEG``.

    The crops depend only on ``key`` (the random seed) and the photograph; their shorter side is drawn
    from ``short_range`` (capped at the photograph's shorter side: never upscaled). Returns (shorter side
    in pixels, file size in bytes) per file.
    """
    rng = random.Random(key)
    with Image.open(src) as im:
        im = im.convert("RGB")
    (out / cls).mkdir(parents=True, exist_ok=True)
    stats = []
    for i in range(count):
        short = min(rng.randint(*short_range), im.width, im.height)
        box = crop_box(rng, im.width, im.height, short)
        w, h = box[2] - box[0], box[3] - box[1]
        size = (short, round(short * h / w)) if w <= h else (round(short * w / h), short)
        dst = out / cls / f"{cls}_{i:04d}.JPEG"
        _save_jpeg(im.resize(size, Image.Resampling.LANCZOS, box=box), dst, quality)
        stats.append((short, dst.stat().st_size))
    return stats


def _copy_photos(srcs: list[Path], cls: str, out: Path, quality: int) -> list[tuple[int, int]]:
    """Write the photographs ``srcs`` as ``out/cls/cls_<i>.JPEG``, re-encoding only what is not a baseline
    4:2:0 RGB JPEG. Returns (shorter side in pixels, file size in bytes) per file."""
    (out / cls).mkdir(parents=True, exist_ok=True)
    stats = []
    for i, src in enumerate(srcs):
        dst = out / cls / f"{cls}_{i:04d}.JPEG"
        with Image.open(src) as im:
            if (im.format == "JPEG" and im.mode == "RGB" and not im.info.get("progressive")
                    and JpegImagePlugin.get_sampling(im) == 2):
                shutil.copyfile(src, dst)
            else:
                _save_jpeg(im, dst, quality)
            stats.append((min(im.size), dst.stat().st_size))
    return stats


def _load_manifest(out: Path, params: dict) -> dict | None:
    """The manifest of ``out`` if it describes a complete set built with ``params``, else None."""
    try:
        manifest = json.loads((out / MANIFEST).read_text())
        train = out / "train"
        count = sum(len(os.listdir(d)) for d in os.scandir(train) if d.is_dir())
    except (OSError, ValueError):
        return None
    return manifest if manifest.get("params") == params and manifest.get("images") == count else None


def prepare(out: str | os.PathLike, num_images: int = 2000, seed: int = 0, quality: int = 90,
            cache: str | os.PathLike = "data/.debs",
            short_side: tuple[int, int] | None = None) -> tuple[dict, bool]:
    """Build (or find already built) the ImageNet-like folder ``out/train/<class>/*.JPEG``.

    Args:
        out: output folder; ``out/train`` and ``out/manifest.json`` are replaced when the parameters
            differ from the ones recorded there.
        num_images: number of images to write (>= 1); at most 10 % of them are ~500 px photographs kept
            as they are, the rest are crops of wallpapers with a shorter side of 300-500 px.
        seed: random seed; the same seed and packages give byte-identical files.
        quality: JPEG quality (1-95) of the images that are encoded here.
        cache: folder for the downloaded ``.deb`` files and their unpacked contents.
        short_side: ``None`` (default): the ImageNet-like set described above. ``(MIN, MAX)``: the
            high-resolution variant: only crops, with a shorter side of MIN-MAX px, of the wallpapers whose
            shorter side is at least MIN (e.g. ``(1500, 2000)``); no photographs kept as they are.

    Returns:
        (manifest, cached): the manifest written to ``out/manifest.json`` (parameters, image and class
        counts, total bytes, shorter-side statistics in pixels, packages used and their download size),
        and whether the folder was already complete.
    """
    out, cache = Path(out), Path(cache)
    params = {"format_version": FORMAT_VERSION, "num_images": num_images, "seed": seed, "quality": quality}
    short_range = SHORT_SIDE_PX
    if short_side is not None:  # only recorded when set: the default set's manifest (and cache) is unchanged
        short_range = (int(short_side[0]), int(short_side[1]))
        if not 1 <= short_range[0] <= short_range[1]:
            raise ValueError(f"prepare: expected 1 <= MIN <= MAX, got {short_side=}")
        params["short_side"] = list(short_range)
    if manifest := _load_manifest(out, params):
        return manifest, True

    debs = fetch_packages(sorted({p for s in SOURCES for p in s.packages}), cache)
    hires: list[tuple[str, Path]] = []
    photos: dict[str, list[Path]] = {}
    used: set[str] = set()
    for src in SOURCES:
        pkg = next((p for p in src.packages if p in debs), None)
        if short_side is not None and not src.hires:
            continue
        found = _find_photos(src, cache / "x" / pkg, max(HIRES_MIN_SIDE_PX, short_range[0])) if pkg else []
        if found:
            used.add(pkg)
        for name, path in found:
            if src.hires:
                hires.append((_class_name(src.label, name), path))
            else:
                photos.setdefault(src.label, []).append(path)
    if not hires:
        raise RuntimeError("no wallpaper photographs found; check that `apt-get download "
                           "mate-backgrounds` works (after `sudo apt-get update`)")

    # Plan: a seeded subset of the ~500 px photographs, and crops spread evenly over the wallpapers.
    rng = random.Random(seed)
    as_is = [(cls, path) for cls in sorted(photos) for path in photos[cls]]
    as_is = sorted(rng.sample(as_is, min(len(as_is), int(num_images * MAX_AS_IS_FRACTION))))
    n_crops = num_images - len(as_is)
    extra = set(rng.sample(range(len(hires)), n_crops % len(hires)))
    counts = [n_crops // len(hires) + (i in extra) for i in range(len(hires))]

    (out / MANIFEST).unlink(missing_ok=True)
    tmp = out / "train.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    stats: list[tuple[int, int]] = []
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool, \
            tqdm(total=num_images, unit="img", desc="prepare") as bar:
        jobs = [pool.submit(_make_crops, path, cls, n, f"{seed}/{cls}", tmp, quality, short_range)
                for (cls, path), n in zip(hires, counts) if n]
        jobs += [pool.submit(_copy_photos, [p for c, p in as_is if c == cls], cls, tmp, quality)
                 for cls in sorted({c for c, _ in as_is})]
        for job in as_completed(jobs):
            done = job.result()
            stats += done
            bar.update(len(done))
    shutil.rmtree(out / "train", ignore_errors=True)
    tmp.rename(out / "train")

    shorts = sorted(s for s, _ in stats)
    manifest = {
        "params": params,
        "images": len(stats),
        "classes": sum(1 for d in (out / "train").iterdir()),
        "bytes": sum(b for _, b in stats),
        "short_side_px": {"min": shorts[0], "median": statistics.median_low(shorts), "max": shorts[-1]},
        "download_bytes": sum(debs[p].stat().st_size for p in used),
        "packages": {p: debs[p].name for p in sorted(used)},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest, False


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; prints a one-line summary of the folder."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder, e.g. data/imagenet_like")
    parser.add_argument("--num-images", type=int, default=None,
                        help="number of images (default 2000; 320 with --variant hires)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality 1-95 (default 90)")
    parser.add_argument("--cache", default="data/.debs", help="folder for .deb files (default data/.debs)")
    parser.add_argument("--variant", choices=("imagenet", "hires"), default="imagenet",
                        help="hires: crops with a shorter side of 1500-2000 px (same as --short-side 1500 2000)")
    parser.add_argument("--short-side", type=int, nargs=2, metavar=("MIN", "MAX"), default=None,
                        help="high-resolution variant: crops with a shorter side of MIN-MAX px")
    args = parser.parse_args(argv)
    short_side = tuple(args.short_side) if args.short_side else (HIRES_SHORT_SIDE_PX if args.variant == "hires" else None)
    if args.num_images is None:
        args.num_images = 2000 if short_side is None else HIRES_NUM_IMAGES
    if short_side is not None and not 1 <= short_side[0] <= short_side[1]:
        parser.error("--short-side needs 1 <= MIN <= MAX")
    if args.num_images < 1 or not 1 <= args.quality <= 95:
        parser.error("--num-images must be >= 1 and --quality in 1-95")
    t0 = time.perf_counter()
    m, cached = prepare(args.out, args.num_images, args.seed, args.quality, args.cache, short_side)
    s = m["short_side_px"]
    print(f"{m['images']} images, {m['classes']} classes, {m['bytes'] / 1e6:.1f} MB "
          f"(shorter side {s['min']}-{s['max']} px, median {s['median']}) in {Path(args.out) / 'train'}, "
          f"{'found' if cached else 'built'} in {time.perf_counter() - t0:.2f} s "
          f"from {m['download_bytes'] / 1e6:.0f} MB of .deb packages")


if __name__ == "__main__":
    main()
