"""decode_image's dtype: knowable from the arguments (opcheck, torch.compile with fullgraph=True), the default
(``dtype=None``) that keeps a 16-bit file's 16 bits in UNCHANGED mode -- one rule for the wrapper and the op,
eager, and an error naming ``dtype=`` where the depth cannot be known (tracing) -- and uint16 output in every
mode, against Pillow's 16-bit reads. TorchScript and the C++ program: tests/deploy."""

import io

import numpy as np
import pytest
import torch
from PIL import Image
from torch._subclasses.fake_tensor import FakeTensorMode

from spdl_torch.io import decode_image

from tests._utils import images
from tests._utils.corpus import files, params


def _gray16(height=5, width=7) -> np.ndarray:
    return (np.arange(height * width, dtype=np.uint32).reshape(height, width) * 1543 % 65536).astype(np.uint16)


def _png16() -> bytes:
    return images.encode(Image.fromarray(_gray16()), "PNG")


def _png8() -> bytes:
    return images.encode(images.noise((5, 7, 3), seed=2), "PNG")


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("dtype", [None, torch.uint8, torch.uint16])
@pytest.mark.parametrize("mode", ["UNCHANGED", "RGB", "GRAY_ALPHA"])
def test_opcheck_decode_image_dtype(bits, dtype, mode):
    data = images.as_tensor(_png16() if bits == 16 else _png8())
    kwargs = {"mode": mode} if dtype is None else {"mode": mode, "dtype": dtype}
    out = torch.ops.spdl_torch.decode_image(data, **kwargs)
    if dtype is None and mode == "UNCHANGED":  # the file's depth: the fake kernel cannot know it
        assert out.dtype == (torch.uint16 if bits == 16 else torch.uint8)
        with FakeTensorMode() as fake, pytest.raises(ValueError, match=r"dtype=None .* pass dtype=torch.uint8"):
            torch.ops.spdl_torch.decode_image(fake.from_tensor(data), **kwargs)
        return
    torch.library.opcheck(torch.ops.spdl_torch.decode_image.default, (data,), kwargs)
    assert out.dtype == (torch.uint8 if dtype is None else dtype)


def test_op_and_wrapper_agree_on_a_16bit_png():
    # the values Pillow reads (1000 stays 1000), from the op as from the wrapper, with dtype=None
    gray = _gray16()
    gray[0, 0] = 1000
    data = images.encode(Image.fromarray(gray), "PNG")
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(data))), gray)
    op = torch.ops.spdl_torch.decode_image(images.as_tensor(data), mode="UNCHANGED")
    wrapper = decode_image(data, mode="UNCHANGED")
    assert op.dtype == wrapper.dtype == torch.uint16
    np.testing.assert_array_equal(op[0].numpy(), gray)
    np.testing.assert_array_equal(wrapper[0].numpy(), gray)
    assert int(op[0, 0, 0]) == 1000


def test_op_under_compile_without_dtype_names_dtype():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def decode(x):
        return torch.ops.spdl_torch.decode_image(x, mode="UNCHANGED")

    with pytest.raises(Exception, match=r"pass dtype=torch.uint8 or dtype=torch.uint16"):
        decode(images.as_tensor(_png16()))


@pytest.mark.parametrize("bits,dtype", [(8, torch.uint8), (16, torch.uint16), (16, torch.uint8), (8, torch.uint16)])
def test_torch_compile_fullgraph_unchanged(bits, dtype):
    torch._dynamo.reset()
    data = images.as_tensor(_png16() if bits == 16 else _png8())

    # the dtype comes from the fake kernel at trace time: aot_eager traces what Inductor would get, without
    # generating C++ (Inductor itself: tests/io/test_batch.py's test_torch_compile_fullgraph[inductor], slow tier)
    @torch.compile(fullgraph=True, dynamic=True, backend="aot_eager")
    def decode_as_float(x):
        image = decode_image(x, mode="UNCHANGED", dtype=dtype)
        return image.to(torch.float32) / float(torch.iinfo(dtype).max)

    compiled = decode_as_float(data)
    eager = decode_image(data, mode="UNCHANGED", dtype=dtype).to(torch.float32) / float(torch.iinfo(dtype).max)
    torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
    assert compiled.shape == ((1 if bits == 16 else 3), 5, 7)


def test_unchanged_without_dtype_under_compile_is_a_clear_error():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True)
    def decode(x):
        return decode_image(x, mode="UNCHANGED")

    with pytest.raises(Exception, match=r"mode=UNCHANGED with dtype=None .* pass dtype=torch.uint8"):
        decode(images.as_tensor(_png16()))


def test_eager_default_keeps_the_files_depth():
    assert decode_image(_png16(), mode="UNCHANGED").dtype == torch.uint16
    assert decode_image(_png8(), mode="UNCHANGED").dtype == torch.uint8
    assert decode_image(_png16(), mode="RGB").dtype == torch.uint8


def test_uint16_in_every_mode_against_pillow():
    gray = _gray16()
    data = _png16()
    # 16-bit grey: exact in uint16; colour modes replicate the grey; alpha is the maximum
    np.testing.assert_array_equal(decode_image(data, mode="GRAY", dtype=torch.uint16)[0].numpy(), gray)
    rgba = decode_image(data, mode="RGBA", dtype=torch.uint16).permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(rgba[..., :3], np.stack([gray] * 3, -1))
    np.testing.assert_array_equal(rgba[..., 3], 65535)
    # 8-bit files widen by bit replication (v * 257): uint8 output is their high byte again
    rgb8 = np.asarray(Image.open(io.BytesIO(_png8())).convert("RGB"))
    wide = decode_image(_png8(), mode="RGB", dtype=torch.uint16).permute(1, 2, 0).numpy()
    np.testing.assert_array_equal(wide, rgb8.astype(np.uint16) * 257)
    # 16 -> 8 bit keeps the high byte
    np.testing.assert_array_equal(decode_image(data, mode="UNCHANGED", dtype=torch.uint8)[0].numpy(),
                                  (gray >> 8).astype(np.uint8))
    luma = np.asarray(Image.fromarray(rgb8).convert("L")).astype(np.uint16) * 257
    wide_gray = decode_image(_png8(), mode="GRAY", dtype=torch.uint16)[0].numpy()
    assert np.abs(wide_gray.astype(np.int32) - luma).max() <= 257  # luma at 16 bit, rounded there


def test_jpeg_uint16_is_the_replicated_uint8():
    data = images.encode(images.upsampled_noise(16, 24), "JPEG", quality=90)
    for mode in ("RGB", "GRAY", "UNCHANGED", "RGBA"):
        eight = decode_image(data, mode=mode)
        wide = decode_image(data, mode=mode, dtype=torch.uint16)
        assert wide.dtype == torch.uint16 and wide.shape == eight.shape
        assert torch.equal(wide.to(torch.int32), eight.to(torch.int32) * 257), mode


@pytest.mark.parametrize("fmt", ["PPM", "TIFF"])
def test_other_16bit_files_keep_16_bits_by_default(tmp_path, fmt):
    gray = _gray16()
    path = tmp_path / ("a.pgm" if fmt == "PPM" else "a.tif")
    Image.fromarray(gray).save(path)
    reread = np.asarray(Image.open(path))
    np.testing.assert_array_equal(reread, gray)  # Pillow's own reference
    out = decode_image(path, mode="UNCHANGED")
    assert out.dtype == torch.uint16
    np.testing.assert_array_equal(out[0].numpy(), reread)


def test_bad_dtype_is_refused():
    with pytest.raises(ValueError, match="dtype=torch.float32 is not supported"):
        decode_image(_png8(), dtype=torch.float32)
    with pytest.raises(RuntimeError, match="expected dtype uint8 or uint16"):
        torch.ops.spdl_torch.decode_image(images.as_tensor(_png8()), dtype=torch.int16)


def _pillow_is_16bit(path) -> bool:
    """Whether the file stores 16-bit samples, by Pillow's reading of its header (Pillow itself opens 16-bit
    colour as 8-bit RGB, so its mode alone does not say)."""
    with Image.open(path) as im:
        if im.mode.startswith("I;16"):
            return True
        if im.format == "TIFF":
            bits = im.tag_v2.get(258, (1,))
            return (bits if isinstance(bits, tuple) else (bits,))[0] == 16 and im.tag_v2.get(339, 1) in (1, (1,))
        return im.format == "PNG" and path.read_bytes()[24] == 16


STILLS = files("pngsuite", ".png") + files("png_other", ".png") + files("webp_tiff_bmp_gif", ".png", ".tif", ".tiff")


@pytest.mark.parametrize("path", params(STILLS))
def test_unchanged_default_dtype_follows_the_files_depth(path):
    try:
        sixteen = _pillow_is_16bit(path)
    except Exception:
        pytest.skip("Pillow cannot open it")
    try:
        out = decode_image(path, mode="UNCHANGED")
    except RuntimeError:
        pytest.skip("refused (covered by test_decode_image)")
    assert out.dtype == (torch.uint16 if sixteen else torch.uint8)
