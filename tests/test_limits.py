"""The default limits (spdl_torch/_limits.py, ``spdl_torch.io.limits``): the defaults and the repr that lists
them, a value set there read by every later call (eagerly and under ``torch.compile``), integers only, the five
names only. Every test that sets a limit restores it (the ``limits`` fixture)."""

import errno
import io

import numpy as np
import pytest
import torch
from PIL import Image

import spdl_torch
import spdl_torch.io
from spdl_torch._limits import DEFAULTS

NAMES = ["image_pixels", "image_bytes", "audio_samples", "video_frames", "video_output_bytes"]


@pytest.fixture
def limits():
    """``spdl_torch.io.limits``, every value put back as it was after the test."""
    saved = {name: getattr(spdl_torch.io.limits, name) for name in NAMES}
    try:
        yield spdl_torch.io.limits
    finally:
        for name, value in saved.items():
            setattr(spdl_torch.io.limits, name, value)


@pytest.fixture
def png():
    """A 64 x 10 PNG: 640 pixels (64 wide: FFmpeg's own check pads rows)."""
    buf = io.BytesIO()
    Image.new("RGB", (64, 10), (1, 2, 3)).save(buf, format="PNG")
    return buf.getvalue()


def test_the_defaults_and_the_repr():
    limits = spdl_torch.io.limits
    assert list(DEFAULTS) == NAMES and "limits" in spdl_torch.io.__all__
    assert [getattr(limits, n) for n in NAMES] == [178_956_970, 0, 1 << 30, 4096, 1 << 34]
    assert limits.image_pixels == 2 * Image.MAX_IMAGE_PIXELS  # where Pillow raises DecompressionBombError
    assert repr(limits) == ("spdl_torch.io.limits(image_pixels=178_956_970, image_bytes=0, "
                            "audio_samples=1_073_741_824, video_frames=4_096, video_output_bytes=17_179_869_184)")
    doc = type(limits).__doc__
    assert all(f"{n}:" in doc for n in NAMES) and "pixels" in doc and "bytes" in doc and "samples" in doc


def test_a_value_set_is_read_at_each_call(limits, png):
    assert spdl_torch.io.decode_image(png).shape == (3, 10, 64)
    limits.image_pixels = 639  # one pixel too few
    assert limits.image_pixels == 639 and "image_pixels=639," in repr(limits)
    with pytest.raises(spdl_torch.DecodeError, match=r"640 pixels exceeds the limit of 639 pixels"):
        spdl_torch.io.decode_image(png)
    with pytest.raises(spdl_torch.DecodeError, match="639 pixels"):
        spdl_torch.io.decode_images([png], height=8, width=8)
    assert spdl_torch.io.decode_image(png, max_pixels=640).shape == (3, 10, 64)  # an explicit limit wins
    limits.image_pixels = 640
    assert spdl_torch.io.decode_image(png).shape == (3, 10, 64)
    limits.image_pixels = 0  # 0 or less: no limit
    assert spdl_torch.io.decode_image(png).shape == (3, 10, 64)


def test_image_bytes_is_read_at_each_call(limits, png, tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(png)
    assert spdl_torch.io.decode_image(path).shape == (3, 10, 64)
    limits.image_bytes = len(png) - 1
    with pytest.raises(OSError) as info:
        spdl_torch.io.decode_image(path)
    assert info.value.errno == errno.EFBIG
    limits.image_bytes = len(png)
    assert spdl_torch.io.decode_image(path).shape == (3, 10, 64)


def test_a_value_set_is_read_under_torch_compile(limits, png):
    data = torch.frombuffer(bytearray(png), dtype=torch.uint8)
    compiled = torch.compile(lambda d: spdl_torch.io.decode_image(d).sum())
    assert compiled(data).item() == 640 * 6
    limits.image_pixels = 639
    with pytest.raises(spdl_torch.DecodeError, match="639 pixels"):
        compiled(data)
    limits.image_pixels = DEFAULTS["image_pixels"]
    assert compiled(data).item() == 640 * 6


def test_integers_of_numpy_and_torch_are_stored_as_int(limits):
    limits.video_frames = np.int64(12)
    assert limits.video_frames == 12 and type(limits.video_frames) is int
    limits.video_frames = torch.tensor(13)
    assert limits.video_frames == 13 and type(limits.video_frames) is int
    limits.audio_samples = -1  # no limit
    assert limits.audio_samples == -1


@pytest.mark.parametrize("value", [1.5, 2.0, "100", None, True, np.bool_(False), torch.tensor(1.0)],
                         ids=["float", "whole-float", "str", "None", "bool", "numpy-bool", "float-tensor"])
def test_a_value_that_is_no_int_is_refused(limits, value):
    with pytest.raises(TypeError, match=r"spdl_torch\.io\.limits\.image_pixels: expected an int \(0 or less: no "
                                        r"limit\), got "):
        limits.image_pixels = value
    assert limits.image_pixels == DEFAULTS["image_pixels"]  # unchanged


def test_an_unknown_name_is_refused(limits):
    with pytest.raises(AttributeError, match=r"spdl_torch\.io\.limits has no limit 'max_image_pixels'; the limits: "
                                             r"image_pixels, image_bytes, audio_samples, video_frames, "
                                             r"video_output_bytes"):
        limits.max_image_pixels = 10
    with pytest.raises(AttributeError, match="image_pixel"):
        limits.image_pixel  # noqa: B018
    with pytest.raises(AttributeError, match=r"spdl_torch\.io\.limits\.image_pixels cannot be deleted"):
        del limits.image_pixels
    assert limits.image_pixels == DEFAULTS["image_pixels"]
    assert not hasattr(limits, "__dict__")  # nothing else can be stored on it


def test_the_fixture_restores_what_a_test_set(limits):
    limits.video_output_bytes = 7
    limits.image_bytes = 3


def test_after_the_fixture_the_defaults_are_back():  # runs after the test above (file order)
    assert [getattr(spdl_torch.io.limits, n) for n in NAMES] == list(DEFAULTS.values())
