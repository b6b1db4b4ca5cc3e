"""The tiny inputs the documentation's snippets name, and the folder the ``docs_*.py`` examples run in.

:func:`make_inputs` writes photos (``cat.jpg``, ``dog.jpg``, ``a.png`` and 48 JPEGs under
``data/imagenet_like/train/{cat,dog}/``) and, with the ffmpeg CLI, a 3 s video (``clip.mp4``) and 5 s audio files
(``speech.flac``, ``speech.mp3``, ``a.ogg``). :func:`enter` (called first by every example) makes them in a
temporary folder and changes into it, or with ``--in DIR`` changes into ``DIR`` to run on the files there.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

FFMPEG = shutil.which("ffmpeg")


def make_inputs(root: str | os.PathLike) -> Path:
    """Writes the inputs into ``root`` (created if missing) and returns it as a Path."""
    root = Path(root)
    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (root / "data/imagenet_like/train" / c).mkdir(parents=True, exist_ok=True)
        for i in range(24):  # 48 images: a batch of 32 and one of 16
            Image.fromarray(rng.integers(0, 255, (260 + i, 300, 3), dtype=np.uint8)).save(
                root / "data/imagenet_like/train" / c / f"{i}.JPEG")
    Image.fromarray(rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)).save(root / "cat.jpg")
    shutil.copy(root / "cat.jpg", root / "dog.jpg")
    Image.open(root / "cat.jpg").save(root / "a.png")
    if FFMPEG:
        def run(*a):
            subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-y", *a], check=True, capture_output=True)

        run("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=3", "-c:v", "libx264", "-preset",
            "ultrafast", "-g", "12", "-pix_fmt", "yuv420p", str(root / "clip.mp4"))
        for name in ("speech.flac", "speech.mp3", "a.ogg"):
            run("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=22050:duration=5", str(root / name))
    return root


def enter(description: str | None = None, needs_ffmpeg: bool = False) -> Path:
    """Parses the example's command line (``--in DIR``), then changes into DIR, or into a temporary folder
    holding :func:`make_inputs` (removed at exit). Exits with a message when the inputs need the ffmpeg CLI
    and it is missing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--in", dest="folder", metavar="DIR",
                        help="run in DIR, on the files the snippets name there (default: tiny inputs made here)")
    args = parser.parse_args()
    if args.folder:
        root = Path(args.folder)
    else:
        if needs_ffmpeg and not FFMPEG:
            sys.exit("this example's inputs are made with the ffmpeg CLI (apt-get install ffmpeg)")
        root = Path(tempfile.mkdtemp(prefix="spdl_torch_example_"))
        atexit.register(shutil.rmtree, root, True)
        make_inputs(root)
    os.chdir(root)
    return root
