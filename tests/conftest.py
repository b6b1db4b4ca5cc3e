"""Fixtures shared by the test folders; the image helpers behind them are in ``tests/images.py``."""

import random

import numpy as np
import pytest
import torch

from . import images


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
