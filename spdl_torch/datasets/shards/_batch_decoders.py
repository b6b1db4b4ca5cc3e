"""Batch decoders of dict mode: one native call decodes a member (audio, video) of up to ``batch_size`` samples.

A value of ``TarShardDataset(decoders={ext: ...})`` that is a :class:`BatchDecoder` gets the members ``<key>.<ext>``
of ``batch_size`` consecutive samples at once, as uint8 tensors (views of the read buffers, no copy), with their
per-sample seeds ``(seed, epoch, global index)``; a plain callable gets one member at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..._renamed import renamed_kwargs

__all__ = ["AudioBatchDecoder", "BatchDecoder", "VideoClipBatchDecoder"]


class BatchDecoder:
    """Base class of the decoders that take a batch of members: subclasses implement :meth:`decode_batch`."""

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        """The decoded values of ``datas`` (B uint8 Tensor[num_bytes], the members' bytes), in order.

        Args:
            datas: the members, one per sample that has this member.
            seeds: int64 Tensor[B], the samples' seeds (from ``(seed, epoch, global index)``).

        Raises:
            spdl_torch.DecodeError: a member cannot be decoded; ``sample_index`` is its position in ``datas``
                (the dataset names the shard, key and member and applies its ``on_error`` policy).
        """
        raise NotImplementedError


class AudioBatchDecoder(BatchDecoder):
    """Audio members (any format FFmpeg demuxes) decoded, mixed, resampled and cropped by one
    :func:`spdl_torch.io.decode_audio_batch` call per batch, exactly as :class:`spdl_torch.datasets.AudioDataset`
    decodes files (the ffmpeg CLI's samples).

    Each value is a :class:`spdl_torch.datasets.Waveform` ``(waveform Tensor[C, n], length n)``: float32
    (nominally in [-1, 1]; lossy codecs can exceed it, as the CLI's samples do) or int16, C = ``num_channels``,
    at ``sample_rate`` Hz; collated (``default_collate``) into ``Waveform(waveform Tensor[B, C, N], length int64
    Tensor[B])``, zero-padded.

    Args:
        sample_rate: output rate in Hz.
        num_channels: output channels (the CLI's ``-ac`` rule).
        duration: crop length in seconds (n <= N = round(duration * sample_rate)); ``None``: whole members.
        random_crop: with ``duration``: each crop starts at a sample drawn from the sample's seed (the same for
            any thread count, rank count or order; a new crop each epoch); ``False``: the first ``duration``
            seconds.
        dtype: ``torch.float32`` or ``torch.int16``.

    Raises:
        ValueError: ``random_crop`` without ``duration``.
    """

    def __init__(self, *, sample_rate: int = 16000, num_channels: int = 1, duration: float | None = None,
                 random_crop: bool = False, dtype: torch.dtype = torch.float32) -> None:
        from ..audio import AudioDataset

        self._decoder = AudioDataset([], sample_rate=sample_rate, num_channels=num_channels, duration=duration,
                                     random_crop=random_crop, seed=0, dtype=dtype)

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        from ..audio import Waveform

        return [Waveform(w, w.shape[-1]) for w in self._decoder._decode(datas, seeds)]

    def __repr__(self) -> str:
        d = self._decoder
        return (f"AudioBatchDecoder(sample_rate={d.sample_rate}, num_channels={d.num_channels}, "
                f"duration={d.duration}, random_crop={d.random_crop}, dtype={d.dtype})")


class VideoClipBatchDecoder(BatchDecoder):
    """Video members as clips, decoded by one :func:`spdl_torch.io.decode_video_clips` call per batch, exactly
    as :class:`spdl_torch.datasets.VideoClipDataset` decodes files (its arguments, fused transform prefix and
    per-clip remainder).

    Each value is a Tensor[N, T, 3, H, W] (``dimension_order="NCTHW"``: [N, 3, T, H, W]) of ``clips_per_video`` clips of
    ``clip_len`` frames; with a fully fused transform they are the rows of one batch tensor, which
    :func:`spdl_torch.datasets.collate` returns without a copy. Random clip starts and geometry are drawn from
    the sample's seed. Without a transform whose first step fuses, each video is decoded at its own size.

    Args:
        clip_len, stride, clips_per_video, transform, sampling, frame_interval, dimension_order, seek_mode,
        num_ffmpeg_threads, max_pixels, max_frames, warn_unfused: as :class:`spdl_torch.datasets.VideoClipDataset`
        (``layout=``, ``threads=``: deprecated names).
    """

    @renamed_kwargs(layout="dimension_order", threads="num_ffmpeg_threads")
    def __init__(self, clip_len: int = 16, stride: int = 1, clips_per_video: int = 1,
                 transform: Callable | None = None, *, sampling: str | None = None, frame_interval: float = 0.0,
                 dimension_order: str = "NTCHW", seek_mode: str = "exact", num_ffmpeg_threads: int = 1,
                 max_pixels: int | None = None,
                 max_frames: int | None = None, warn_unfused: bool = True) -> None:
        from ..video import VideoClipDataset

        self._decoder = VideoClipDataset([], clip_len=clip_len, stride=stride, clips_per_video=clips_per_video,
                                         transform=transform, sampling=sampling, frame_interval=frame_interval,
                                         dimension_order=dimension_order, seed=0, seek_mode=seek_mode,
                                         num_ffmpeg_threads=num_ffmpeg_threads,
                                         max_pixels=max_pixels, max_frames=max_frames, warn_unfused=warn_unfused)

    @property
    def plan(self) -> Any:
        """The fused plan of the transform (``None``: not fused)."""
        return self._decoder.plan

    def decode_batch(self, datas: list[torch.Tensor], seeds: torch.Tensor) -> list[Any]:
        return self._decoder._decode_clips(datas, seeds)

    def __repr__(self) -> str:
        from ..video import _describe_plan

        d = self._decoder
        fused = _describe_plan(d.plan)
        return (f"VideoClipBatchDecoder(clip_len={d.clip_len}, stride={d.stride}, "
                f"clips_per_video={d.clips_per_video}, sampling={d.sampling!r}, {fused})")
