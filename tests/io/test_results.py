"""One result type per decode function whatever its flags, and torchcodec's and torchvision's argument names."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

import spdl_torch
from spdl_torch.io import (AudioBatch, AudioSamples, ImageBatch, VideoClips, VideoFrames, decode_audio,
                           decode_audio_batch, decode_images, decode_video_clips, decode_video_frames)
from tests._utils import audio as A
from tests._utils import images
from tests._utils import video as vm


@pytest.fixture(scope="module")
def jpegs():
    return [images.encode(images.noise((40 + 4 * i, 50, 3), seed=i), "JPEG", quality=90) for i in range(3)]


@pytest.fixture(scope="module")
def wav(tmp_path_factory):
    if A.FFMPEG is None:
        pytest.skip("the ffmpeg CLI is not installed")
    return A.make_audio(tmp_path_factory.mktemp("results") / "a.wav", rate=16000, channels=1, codec="pcm_s16le",
                        seconds=1.0)


def test_decode_images_one_type_for_strict_and_lenient(jpegs):
    strict = decode_images(jpegs, height=16, width=16)
    lenient = decode_images([*jpegs, b"not an image"], height=16, width=16, strict=False)
    assert type(strict) is type(lenient) is ImageBatch
    assert strict.ok.tolist() == [True] * 3 and lenient.ok.tolist() == [True, True, True, False]
    assert torch.equal(lenient.data[:3], strict.data) and torch.count_nonzero(lenient.data[3]) == 0
    assert repr(strict) == ("ImageBatch(data=Tensor(shape=[3, 3, 16, 16], dtype=torch.uint8), "
                            "ok=Tensor(shape=[3], dtype=torch.bool))")


def test_decode_images_dimension_order(jpegs):
    nchw = decode_images(jpegs, height=16, width=12).data
    nhwc = decode_images(jpegs, height=16, width=12, dimension_order="NHWC").data
    assert nhwc.shape == (3, 16, 12, 3) and nhwc.is_contiguous() and torch.equal(nhwc, nchw.permute(0, 2, 3, 1))
    with pytest.raises(ValueError, match="expected dimension_order 'NCHW' or 'NHWC'"):
        decode_images(jpegs, height=16, width=12, dimension_order="CHW")


def test_decode_video_clips_one_type_and_torchcodec_names():
    path = vm.make_video("h264_bframes")
    kw = dict(num_frames_per_clip=2, num_clips=2, height=16, width=16, geometry="resize")
    strict = decode_video_clips([path], **kw)
    lenient = decode_video_clips([path, b"not a video"], strict=False, **kw)
    assert type(strict) is type(lenient) is VideoClips
    assert strict.ok.tolist() == [True] and lenient.ok.tolist() == [True, False]
    assert torch.equal(lenient.data[0], strict.data[0]) and lenient.indices[1].eq(-1).all()
    assert strict.indices.shape == (1, 2, 2) and strict.indices.ge(0).all()
    cthw = decode_video_clips([path], dimension_order="NCTHW", num_ffmpeg_threads=2, **kw).data
    assert torch.equal(cthw, strict.data.transpose(2, 3))
    with pytest.raises(ValueError, match="expected dimension_order 'NTCHW' or 'NCTHW'"):
        decode_video_clips([path], dimension_order="NCHW", **kw)


def test_decode_video_frames_torchcodec_names_and_ok_polarity():
    path = vm.make_video("h264_bframes")
    pts = decode_video_frames(path, indices=[0, 3]).pts_seconds.tolist()
    out = decode_video_frames(path, seconds=pts, stream_index=-1, num_ffmpeg_threads=1)
    assert isinstance(out, VideoFrames) and out.ok.tolist() == [True, True]
    assert out.pts_seconds.tolist() == pts
    assert repr(out).startswith("VideoFrames(data=Tensor(shape=[2, 3, ") and "dtype=torch.float64" in repr(out)
    with pytest.raises(ValueError, match="exactly one of indices= and seconds="):
        decode_video_frames(path)


def test_decode_audio_carries_its_rate_and_window(wav):
    whole = decode_audio(wav)  # the stream's rate, which sample_rate=None used to lose
    assert isinstance(whole, AudioSamples) and whole.sample_rate == 16000
    assert whole.data.shape == (1, 16000) and whole.pts_seconds == 0.0 and whole.duration_seconds == 1.0
    torch.testing.assert_close(whole.data, A.cli_samples(wav), rtol=0, atol=0)
    part = decode_audio(wav, sample_rate=8000, start_seconds=0.25, stop_seconds=0.75)
    assert part.sample_rate == 8000 and part.pts_seconds == 0.25 and part.data.shape == (1, 4000)
    assert part.duration_seconds == 0.5
    assert decode_audio(wav.read_bytes()).sample_rate == 16000
    assert repr(part) == ("AudioSamples(data=Tensor(shape=[1, 4000], dtype=torch.float32), pts_seconds=0.25, "
                          "duration_seconds=0.5, sample_rate=8000)")


def test_audio_batch_fields(wav):
    b = decode_audio_batch([wav, wav], sample_rate=8000, num_channels=1, duration=0.5)
    assert isinstance(b, AudioBatch) and b.sample_rate == 8000 and b.data.shape == (2, 1, 4000)
    assert repr(b).startswith("AudioBatch(data=Tensor(shape=[2, 1, 4000], dtype=torch.float32), lengths=")



def test_result_types_are_frozen_dataclasses_with_data():
    import dataclasses

    from spdl_torch.transforms._augment_program import AugmentOp
    from spdl_torch.transforms._sample_geometry import SampleGeometry

    for name in ("ImageBatch", "VideoClips", "AudioSamples", "AudioBatch", "VideoFrames"):
        cls = getattr(spdl_torch.io, name)
        assert name in spdl_torch.io.__all__ and dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        assert dataclasses.fields(cls)[0].name == "data"
    for cls in (spdl_torch.io.VideoStreamMetadata, spdl_torch.io.AudioStreamMetadata,
                SampleGeometry, AugmentOp, spdl_torch.datasets.Waveform):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    assert spdl_torch.__version__ == "0.2.0"


def test_only_audio_samples_unpack_as_torchcodec_s(jpegs, wav):
    data, pts, duration, rate = decode_audio(wav)  # torchcodec's AudioSamples iterates over its fields
    assert data.shape == (1, 16000) and (pts, duration, rate) == (0.0, 1.0, 16000)
    with pytest.raises(TypeError, match="'ImageBatch' object is not iterable"):
        tuple(decode_images(jpegs, height=8, width=8))  # a batch result does not unpack (torchcodec's FrameBatch)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decode_images(jpegs, height=8, width=8).data = None


def test_new_names_warn_nothing(jpegs, wav):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_images(jpegs, height=8, width=8, geometry="train", seeds=[1, 2, 3], dimension_order="NHWC")
        decode_audio(wav, start_seconds=0.1, stop_seconds=0.2)
        np.asarray(decode_video_frames(vm.make_video("h264_bframes"), seconds=[0.0], stream_index=None).data)
