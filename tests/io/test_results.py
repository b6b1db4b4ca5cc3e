"""One result type per decode function whatever its flags, torchcodec's and torchvision's argument names,
and the deprecated old names (each with the warning naming the new one, and the same values)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import spdl_torch
from spdl_torch.datasets import VideoClipDataset
from spdl_torch.io import (AudioBatch, AudioSamples, ImageBatch, VideoClips, VideoFrames, decode_audio,
                           decode_audio_batch, decode_images, decode_video_clips, decode_video_frames, video_metadata)
from tests._utils import audio as A
from tests._utils import video as vm

from tests._utils import images


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


def test_decode_images_dimension_order_and_deprecated_channels_last(jpegs):
    nchw = decode_images(jpegs, height=16, width=12).data
    nhwc = decode_images(jpegs, height=16, width=12, dimension_order="NHWC").data
    assert nhwc.shape == (3, 16, 12, 3) and nhwc.is_contiguous() and torch.equal(nhwc, nchw.permute(0, 2, 3, 1))
    with pytest.warns(DeprecationWarning, match="channels_last= is deprecated, use dimension_order='NHWC'"):
        old = decode_images(jpegs, height=16, width=12, channels_last=True).data
    assert old.shape == (3, 3, 16, 12) and old.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(old, nchw)
    with pytest.raises(ValueError, match="expected dimension_order 'NCHW' or 'NHWC'"):
        decode_images(jpegs, height=16, width=12, dimension_order="CHW")


def test_decode_video_clips_one_type_and_renamed_arguments():
    path = vm.make_video("h264_bframes")
    kw = dict(clip_len=2, clips_per_video=2, height=16, width=16, geometry="resize")
    strict = decode_video_clips([path], **kw)
    lenient = decode_video_clips([path, b"not a video"], strict=False, **kw)
    assert type(strict) is type(lenient) is VideoClips
    assert strict.ok.tolist() == [True] and lenient.ok.tolist() == [True, False]
    assert torch.equal(lenient.data[0], strict.data[0]) and lenient.indices[1].eq(-1).all()
    assert strict.indices.shape == (1, 2, 2) and strict.indices.ge(0).all()
    cthw = decode_video_clips([path], dimension_order="NCTHW", num_ffmpeg_threads=2, **kw).data
    assert torch.equal(cthw, strict.data.transpose(2, 3))
    with pytest.warns(DeprecationWarning) as rec:
        old = decode_video_clips([path], layout="NCTHW", threads=2, return_indices=True, **kw)
    messages = sorted(str(w.message) for w in rec)
    assert any("layout= is deprecated, use dimension_order=" in m for m in messages)
    assert any("threads= is deprecated, use num_ffmpeg_threads=" in m for m in messages)
    assert any("return_indices= is deprecated" in m for m in messages)
    assert torch.equal(old.data, cthw) and torch.equal(old.indices, strict.indices)
    with pytest.raises(ValueError, match="expected dimension_order 'NTCHW' or 'NCTHW'"):
        decode_video_clips([path], dimension_order="NCHW", **kw)


def test_decode_video_frames_torchcodec_names_and_ok_polarity():
    path = vm.make_video("h264_bframes")
    pts = decode_video_frames(path, indices=[0, 3]).pts_seconds.tolist()
    out = decode_video_frames(path, seconds=pts, stream_index=-1, num_ffmpeg_threads=1)
    assert isinstance(out, VideoFrames) and out.ok.tolist() == [True, True]
    assert out.pts_seconds.tolist() == pts
    assert repr(out).startswith("VideoFrames(data=Tensor(shape=[2, 3, ") and "dtype=torch.float64" in repr(out)
    with pytest.warns(DeprecationWarning) as rec:
        old = decode_video_frames(path, timestamps=pts, stream=-1, threads=1)
    assert {str(w.message).split(":")[1].split("=")[0].strip() for w in rec} == {"timestamps", "stream", "threads"}
    assert torch.equal(old.data, out.data)
    with pytest.warns(DeprecationWarning, match=r"VideoFrames.corrupt is deprecated, use VideoFrames.ok"):
        assert out.corrupt.tolist() == [False, False]
    with pytest.warns(DeprecationWarning, match="stream= is deprecated, use stream_index="):
        assert video_metadata(path, stream=-1) == video_metadata(path, stream_index=-1)
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
    with pytest.warns(DeprecationWarning) as rec:
        old = decode_audio(wav, sample_rate=8000, start=0.25, stop=0.75)
    assert len(rec) == 2 and "start= is deprecated, use start_seconds=" in str(rec[0].message)
    assert torch.equal(old.data, part.data)
    assert repr(part) == ("AudioSamples(data=Tensor(shape=[1, 4000], dtype=torch.float32), pts_seconds=0.25, "
                          "duration_seconds=0.5, sample_rate=8000)")


def test_audio_batch_data_and_deprecated_samples(wav):
    b = decode_audio_batch([wav, wav], sample_rate=8000, num_channels=1, duration=0.5)
    assert isinstance(b, AudioBatch) and b.sample_rate == 8000 and b.data.shape == (2, 1, 4000)
    with pytest.warns(DeprecationWarning, match=r"AudioBatch.samples is deprecated, use AudioBatch.data"):
        assert b.samples is b.data
    assert repr(b).startswith("AudioBatch(data=Tensor(shape=[2, 1, 4000], dtype=torch.float32), lengths=")


def test_video_clip_dataset_renamed_arguments():
    path = vm.make_video("h264_bframes")
    new = VideoClipDataset([path], clip_len=2, dimension_order="NCTHW", num_ffmpeg_threads=1, seed=0)
    with pytest.warns(DeprecationWarning, match="VideoClipDataset: layout= is deprecated, use dimension_order="):
        old = VideoClipDataset([path], clip_len=2, layout="NCTHW", seed=0)
    assert torch.equal(new[0][0], old[0][0]) and new[0][0].shape[1] == 3


def test_public_names_are_exported():
    for name in ("ImageBatch", "VideoClips", "AudioSamples", "AudioBatch", "VideoFrames", "sample_geometry"):
        assert name in spdl_torch.io.__all__ and hasattr(spdl_torch.io, name)
    assert spdl_torch.__version__ == "0.2.0"


def test_new_names_warn_nothing(jpegs, wav):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_images(jpegs, height=8, width=8, geometry="train", seeds=[1, 2, 3], dimension_order="NHWC")
        decode_audio(wav, start_seconds=0.1, stop_seconds=0.2)
        np.asarray(decode_video_frames(vm.make_video("h264_bframes"), seconds=[0.0], stream_index=None).data)
