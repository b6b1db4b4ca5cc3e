"""Fixtures shared by the test folders; the image helpers behind them are in ``tests/_utils/images.py``."""

import atexit
import os
import random
import shutil
import tempfile

import numpy as np
import pytest
import torch

from tests._utils import images

# torch.compile's on-disk caches (inductor's FX graph and kernel caches, torchinductor_<user> in the temporary folder by default) are
# keyed without the schemas of the extension's ops: a graph compiled against another build's schema would be
# replayed (an "Unknown keyword argument" from the op). Each test session compiles into a cache of its own.
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="spdl_torch-inductor-")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], True)

# The reason every FFmpeg feature of a build without FFmpeg (SPDL_TORCH_FFMPEG=0) raises with
# (csrc/core/features.h): in that build a test that meets it is skipped with it, not failed.
NO_FFMPEG = "this spdl_torch was built without it (SPDL_TORCH_FFMPEG=0"


def _built_with_ffmpeg():
    from spdl_torch import build_info

    return build_info().get("ffmpeg", "1") == "1"


def pytest_collection_modifyitems(config, items):
    """The tests marked ``cuda`` skip without a CUDA device. In a build without FFmpeg, the tests marked
    ``ffmpeg`` (and every video and audio test module) skip."""
    if not torch.cuda.is_available():
        no_device = pytest.mark.skip(reason="needs a CUDA device (none on this machine)")
        for item in items:
            if item.get_closest_marker("cuda"):
                item.add_marker(no_device)
    if _built_with_ffmpeg():
        return
    skip = pytest.mark.skip(reason="needs FFmpeg: spdl_torch was built with SPDL_TORCH_FFMPEG=0")
    for item in items:
        name = item.path.name
        if item.get_closest_marker("ffmpeg") or name.startswith(("test_video", "test_audio")):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In a build without FFmpeg, a test that fails on the error naming the missing FFmpeg (a PNG, a video)
    is reported as skipped with that error: it needs FFmpeg, it did not find a bug."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None and NO_FFMPEG in str(call.excinfo.value):
        reason = next(line for line in str(call.excinfo.value).splitlines() if NO_FFMPEG in line).strip()[:300]
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"needs FFmpeg: {reason}")


@pytest.fixture(autouse=True)
def _restore_rng_state():
    """Each test starts from the RNG state the one before it found: a test that seeds or draws from torch's,
    Python's or numpy's global generator does not change what a later test draws."""
    torch_state, py_state, np_state = torch.get_rng_state(), random.getstate(), np.random.get_state()
    yield
    torch.set_rng_state(torch_state)
    random.setstate(py_state)
    np.random.set_state(np_state)


@pytest.fixture
def image_file(tmp_path):
    """Writes one image under ``tmp_path``: ``image_file(name, pixels, fmt=None, **pillow_options) -> Path``
    (``pixels`` an array or a PIL image; the format from the name's suffix unless ``fmt``)."""

    def make(name, pixels, fmt=None, **save):
        return images.write(tmp_path / name, pixels, fmt, **save)

    return make


@pytest.fixture
def image_folder(tmp_path):
    """Writes an ImageFolder tree under ``tmp_path``:
    ``image_folder(classes, per_class, make, name="{k}.jpg", seed=0, root=".", **pillow_options)``
    returns the paths written (``images.write_folder``); ``tmp_path / root`` is the tree's root."""

    def build(classes, per_class, make, name="{k}.jpg", seed=0, root=".", **save):
        return images.write_folder(tmp_path / root, classes, per_class, make, name, seed, **save)

    return build


@pytest.fixture(scope="session")
def image_tree(tmp_path_factory):
    """``(root, paths)``: an ImageFolder tree of 10 smooth JPEGs (classes ``a``, ``b``; 50x70 to 78x58), read only."""
    root = tmp_path_factory.mktemp("tree")
    paths = images.write_folder(
        root, ("a", "b"), 5, lambda rng, c, k: images.upsampled_noise(50 + 7 * k, 70 - 3 * k, rng), quality=95
    )
    return root, [str(p) for p in paths]


@pytest.fixture(scope="session")
def mixed_folder(tmp_path_factory):
    """An ImageFolder root with classes ``x``, ``y``, ``z`` of a JPEG and two PNGs of noise each (40-42x50), and a
    non-image file ``z/skip.txt``; read only."""
    root = tmp_path_factory.mktemp("opts")
    rng = np.random.default_rng(4)
    for c in ("x", "y", "z"):
        (root / c).mkdir()
        for k in range(3):
            arr = rng.integers(0, 256, (40 + k, 50, 3), dtype=np.uint8)
            images.write(root / c / f"{k}.{'png' if k else 'jpg'}", arr)
    (root / "z" / "skip.txt").write_text("x")
    return root


@pytest.fixture(scope="session")
def smooth_v2_jpegs(tmp_path_factory):
    """Six smooth JPEGs of 50x90 to 105x60 (``images.smooth_jpegs`` seed 2), read only."""
    return images.smooth_jpegs(tmp_path_factory.mktemp("v2"), 2)
