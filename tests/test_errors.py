"""Structured errors: the tag grammar of the native ops (parsed by spdl_torch._errors), DecodeError's
``path`` / ``sample_index`` on real decode failures, ``spdl_torch.deploy.from_op_error`` on raw op errors,
InternalError, and the pixel limit's message (one check for every decoder and the batch planner)."""

import errno
import io
import re

import numpy as np
import pytest
import torch
from PIL import Image

import spdl_torch
from spdl_torch import DecodeError
from spdl_torch._errors import parse_tag
from spdl_torch._errors import InternalError
from spdl_torch.deploy import from_op_error
from spdl_torch.io import decode_image, decode_images


def _jpeg(h: int = 24, w: int = 32, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _truncated() -> bytes:
    data = _jpeg()
    return data[: len(data) // 3]


# --- the grammar ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message, kind, fields, reason",
    [
        ("[DecodeError] JPEG: bad", "DecodeError", {}, "JPEG: bad"),
        ("[DecodeError sample=12] JPEG: x [y] z", "DecodeError", {"sample": 12}, "JPEG: x [y] z"),
        ("[OSError errno=2] cannot open a.jpg", "OSError", {"errno": 2}, "cannot open a.jpg"),
        ("[OSError errno=27 sample=0] big", "OSError", {"errno": 27, "sample": 0}, "big"),
        ("[InternalError sample=3] resample: windows", "InternalError", {"sample": 3}, "resample: windows"),
        ("[InternalError] ", "InternalError", {}, ""),
    ],
)
def test_parse_tag(message, kind, fields, reason):
    tag = parse_tag(message)
    assert (tag.kind, tag.fields, tag.reason) == (kind, fields, reason)


@pytest.mark.parametrize("message", ["JPEG: bad", "[ValueError] x", "[DecodeError]x", "[DecodeError sample=x] y",
                                     "decode_images: expected height and width >= 1, got 0x8", " [DecodeError] x"])
def test_parse_tag_none(message):
    assert parse_tag(message) is None


def test_parse_tag_inside_a_torchscript_traceback():
    message = ("The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript code:\n"
               "  File \"x.py\", line 3\nRuntimeError: [DecodeError sample=1] JPEG: Premature end of JPEG file\n")
    tag = parse_tag(message)
    assert (tag.kind, tag.fields, tag.reason) == ("DecodeError", {"sample": 1}, "JPEG: Premature end of JPEG file")


# --- attributes on real failures ------------------------------------------------------------------------


def test_decode_image_error_attributes(tmp_path):
    bad = tmp_path / "cut.jpg"
    bad.write_bytes(_truncated())
    with pytest.raises(DecodeError, match=rf"^{bad}: JPEG: ") as info:
        decode_image(bad)
    assert info.value.path == str(bad) and info.value.sample_index is None
    assert str(info.value) == f"{bad}: {info.value.reason}" and info.value.reason.startswith("JPEG: ")
    with pytest.raises(DecodeError, match=r"^<bytes>: JPEG: ") as info:
        decode_image(_truncated())
    assert info.value.path is None and info.value.sample_index is None
    with pytest.raises(DecodeError, match=r"^JPEG: ") as info:
        decode_image(torch.frombuffer(bytearray(_truncated()), dtype=torch.uint8))
    assert info.value.path is None and info.value.sample_index is None


def test_decode_images_error_attributes(tmp_path):
    paths = []
    for i, data in enumerate([_jpeg(seed=1), _jpeg(seed=2), _truncated()]):
        paths.append(tmp_path / f"{i}.jpg")
        paths[-1].write_bytes(data)
    with pytest.raises(DecodeError, match=rf"^{paths[2]}: JPEG: ") as info:
        decode_images(paths, height=8, width=8, geometry="resize")
    assert info.value.path == str(paths[2]) and info.value.sample_index == 2
    assert str(info.value) == f"{paths[2]}: {info.value.reason}"
    with pytest.raises(DecodeError, match=r"^sample 2: JPEG: ") as info:
        decode_images([p.read_bytes() for p in paths], height=8, width=8, geometry="resize")
    assert info.value.path is None and info.value.sample_index == 2
    # mixed: the bad sample is bytes, so it has no path
    with pytest.raises(DecodeError, match=r"^sample 1: JPEG: ") as info:
        decode_images([paths[0], _truncated(), paths[1]], height=8, width=8, geometry="resize")
    assert info.value.path is None and info.value.sample_index == 1


def test_decode_error_pickles_with_its_attributes():
    import pickle

    e = DecodeError("a.jpg: JPEG: x", path="a.jpg", sample_index=4, reason="JPEG: x")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is DecodeError and str(back) == str(e)
    assert (back.path, back.sample_index, back.reason) == ("a.jpg", 4, "JPEG: x")
    plain = DecodeError("plain")  # constructible as before: message only
    assert (plain.path, plain.sample_index, plain.reason) == (None, None, "plain")


# --- from_op_error on raw op errors ---------------------------------------------------------------------


def test_from_op_error_decode_images():
    data = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in (_jpeg(), _truncated())]
    with pytest.raises(RuntimeError) as info:
        torch.ops.spdl_torch.decode_images(data, height=8, width=8)
    raw = info.value
    assert not isinstance(raw, DecodeError) and str(raw).startswith("[DecodeError sample=1] JPEG: ")
    converted = from_op_error(raw)
    assert type(converted) is DecodeError and converted.sample_index == 1 and converted.path is None
    assert str(converted) == "sample 1: " + str(raw)[len("[DecodeError sample=1] "):]
    # the message users see from the Python API is the same
    with pytest.raises(DecodeError) as api:
        decode_images(data, height=8, width=8)
    assert str(api.value) == str(converted)


def test_from_op_error_decode_image_and_read_file(tmp_path):
    bad = torch.frombuffer(bytearray(_truncated()), dtype=torch.uint8)
    with pytest.raises(RuntimeError) as info:
        torch.ops.spdl_torch.decode_image(bad)
    assert str(info.value).startswith("[DecodeError] JPEG: ")
    converted = from_op_error(info.value)
    assert type(converted) is DecodeError and str(converted) == str(info.value)[len("[DecodeError] "):]
    assert converted.sample_index is None and converted.path is None
    missing = str(tmp_path / "missing.jpg")
    with pytest.raises(RuntimeError) as info:
        torch.ops.spdl_torch.read_file(missing)
    assert str(info.value).startswith(f"[OSError errno={errno.ENOENT}] ")
    converted = from_op_error(info.value)
    assert type(converted) is FileNotFoundError and converted.errno == errno.ENOENT and missing in str(converted)


def test_from_op_error_deploy_module():
    from spdl_torch.deploy import BatchDecode

    data = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in (_truncated(), _jpeg())]
    with pytest.raises(RuntimeError) as info:
        BatchDecode(height=8, width=8)(data)
    converted = from_op_error(info.value)
    assert type(converted) is DecodeError and converted.sample_index == 0
    assert str(converted).startswith("sample 0: JPEG: ")


def test_from_op_error_leaves_other_errors():
    with pytest.raises(ValueError) as info:
        torch.ops.spdl_torch.decode_images([torch.zeros(3, dtype=torch.uint8)], height=0, width=8)
    assert from_op_error(info.value) is info.value
    plain = RuntimeError("something else")
    assert from_op_error(plain) is plain
    key = KeyError("[DecodeError] not from an op")
    assert from_op_error(key) is key


def test_internal_error():
    e = from_op_error(RuntimeError("[InternalError sample=3] resample: windows do not match the source"))
    assert type(e) is InternalError and isinstance(e, RuntimeError) and not isinstance(e, DecodeError)
    assert e.sample_index == 3 and e.reason == "resample: windows do not match the source"
    assert "this is a bug" in str(e) and str(e).endswith("sample 3: resample: windows do not match the source")
    e = from_op_error(RuntimeError("[InternalError] decode_image: the decoder produced no image"))
    assert e.sample_index is None and "this is a bug" in str(e)
    assert spdl_torch._errors.InternalError is InternalError and InternalError.__module__ == "spdl_torch._errors"


# --- the pixel limit (one check for every decoder and the batch planner) -------------------------------


def _encoded(fmt: str, h: int = 10, w: int = 12) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(5).integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, fmt)
    return buf.getvalue()


# FFmpeg's own guard (AVCodecContext.max_pixels, set to the same limit for the formats without a header
# sniff) counts a row padded to its stride alignment (64 pixels here), so the image is 64 pixels wide: at
# the limit it passes both checks.
@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "BMP"])
def test_pixel_limit_at_the_limit(fmt):
    data = _encoded(fmt, 3, 64)  # 64 x 3 = 192 pixels
    assert decode_image(data, max_pixels=192).shape == (3, 3, 64)
    assert decode_images([data], height=4, width=4, geometry="resize", max_pixels=192).data.shape == (1, 3, 4, 4)
    message = f"{fmt}: image of 64x3 = 192 pixels exceeds the limit of 191 pixels (max_pixels)"
    with pytest.raises(DecodeError, match=rf"^<bytes>: {re.escape(message)}$"):
        decode_image(data, max_pixels=191)
    with pytest.raises(DecodeError, match=rf"^sample 0: {re.escape(message)}$"):
        decode_images([data], height=4, width=4, geometry="resize", max_pixels=191)
    result = decode_images([data, data], height=4, width=4, geometry="resize", max_pixels=191, strict=False)
    batch, ok = result.data, result.ok
    assert ok.tolist() == [False, False] and batch.eq(0).all()
