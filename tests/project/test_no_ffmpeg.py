"""The build without FFmpeg (SPDL_TORCH_FFMPEG=0, `make test-no-ffmpeg`): JPEG decodes as in the full build,
everything FFmpeg decodes raises an error naming the missing FFmpeg and how to rebuild, and build_info says
which decoders were built. In the full build: build_info lists every decoder."""

import numpy as np
import pytest
import torch
from PIL import Image

import spdl_torch
from spdl_torch import DecodeError
from spdl_torch.io import audio_metadata, decode_audio, decode_image, decode_images, decode_video_frames, video_metadata

from tests._utils import images

FULL = spdl_torch.build_info()["ffmpeg"] == "1"
without_ffmpeg = pytest.mark.skipif(FULL, reason="checks the build without FFmpeg (make test-no-ffmpeg)")
# What the errors must say: the missing FFmpeg, the build switch, and the packages to install.
HOW_TO_REBUILD = ("needs FFmpeg", "SPDL_TORCH_FFMPEG=0", "apt-get install libavcodec-dev")


def _jpeg(seed=0, size=(48, 64)):
    rgb = images.upsampled_noise(*size, seed=seed)
    return images.encode(rgb, "JPEG", quality=90)


def _pillow(data):
    import io

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def test_build_info_lists_the_decoders_that_were_built():
    info = spdl_torch.build_info()
    assert info is spdl_torch.build_info()
    if FULL:
        assert info["decoders"] == "jpeg,png,gif,webp,bmp,tiff,pnm,video,audio"
        png = images.encode(np.zeros((2, 3, 3), np.uint8), "PNG")
        assert decode_image(png).shape == (3, 2, 3)
    else:
        assert info["ffmpeg"] == "0" and info["decoders"] == "jpeg"


@without_ffmpeg
def test_jpeg_decodes_within_one_of_pillow():
    data = _jpeg()
    ours = decode_image(images.as_tensor(data)).permute(1, 2, 0).numpy()
    assert ours.shape == (48, 64, 3)
    assert np.abs(ours.astype(int) - _pillow(data).astype(int)).max() <= 1


@without_ffmpeg
@pytest.mark.parametrize("fmt", ["PNG", "GIF", "WEBP", "BMP", "TIFF"])
def test_other_image_formats_raise_decode_error_naming_ffmpeg(fmt):
    data = images.encode(np.zeros((4, 4, 3), np.uint8), fmt)
    with pytest.raises(DecodeError) as err:
        decode_image(images.as_tensor(data))
    message = str(err.value)
    assert {"WEBP": "WebP"}.get(fmt, fmt) + " image: decoding it needs FFmpeg" in message
    assert all(part in message for part in HOW_TO_REBUILD), message


@without_ffmpeg
def test_fused_batch_decodes_jpeg_and_reports_the_other_formats():
    jpegs = [_jpeg(seed) for seed in range(3)]
    png = images.encode(np.zeros((48, 64, 3), np.uint8), "PNG")
    srcs = [images.as_tensor(d) for d in (jpegs[0], png, jpegs[1], jpegs[2])]
    result = decode_images(srcs, height=48, width=64, resize_shorter=48, strict=False)
    batch, ok = result.data, result.ok
    assert ok.tolist() == [True, False, True, True]
    assert torch.equal(batch[1], torch.zeros_like(batch[1]))
    full = decode_images([srcs[0]], height=48, width=64, resize_shorter=48).data
    assert torch.equal(batch[0], full[0])
    with pytest.raises(DecodeError, match="sample 1: .*PNG image: decoding it needs FFmpeg"):
        decode_images(srcs, height=48, width=64, resize_shorter=48)


@without_ffmpeg
@pytest.mark.parametrize("call", [
    lambda b: video_metadata(b), lambda b: decode_video_frames(b, indices=[0]),
    lambda b: decode_audio(b), lambda b: audio_metadata(b)], ids=["video_metadata", "decode_video_frames",
                                                                    "decode_audio", "audio_metadata"])
def test_video_and_audio_raise_not_implemented_naming_ffmpeg(call):
    with pytest.raises(NotImplementedError) as err:
        call(b"\x00" * 64)
    assert all(part in str(err.value) for part in HOW_TO_REBUILD), str(err.value)
