"""The result types of spdl_torch.io, in one place: frozen dataclasses with ``data`` (as torchcodec's ``Frame``,
``FrameBatch`` and ``AudioSamples``), and the stream metadata with torchcodec's field names. Every result's
``repr`` shows its tensors' shapes and dtypes, not their values (a batch's values would flood a log)."""

from __future__ import annotations

import dataclasses
import fractions

import torch

__all__ = ["AudioBatch", "AudioSamples", "AudioStreamMetadata", "ImageBatch", "VideoClips", "VideoFrames",
           "VideoStreamMetadata", "shapes_repr"]


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"Tensor(shape={list(value.shape)}, dtype={value.dtype})"
    return repr(value)


def shapes_repr(result) -> str:
    """``Name(field=Tensor(shape=[...], dtype=...), ...)``: tensors by shape and dtype, other fields by value."""
    fields = ", ".join(f"{f.name}={_describe(getattr(result, f.name))}" for f in dataclasses.fields(result))
    return f"{type(result).__name__}({fields})"


@dataclasses.dataclass(frozen=True, repr=False)
class ImageBatch:
    """The result of :func:`~spdl_torch.io.decode_images`, whatever ``strict`` is.

    Attributes:
        data: Tensor[N, C, H, W] of the requested dtype (``dimension_order="NHWC"``: Tensor[N, H, W, C]).
        ok: bool Tensor[N]: False for samples that failed and were zero-filled (only with ``strict=False``;
            all True otherwise).
    """

    data: torch.Tensor
    ok: torch.Tensor

    def __repr__(self) -> str:
        return shapes_repr(self)


@dataclasses.dataclass(frozen=True, repr=False)
class VideoFrames:
    """Frames of :func:`~spdl_torch.io.decode_video_frames` (torchcodec's ``FrameBatch`` names: ``data``,
    ``pts_seconds``).

    Attributes:
        data: uint8 Tensor[N, 3, H, W], RGB, 0..255 (channels-last strides: ``data.permute(0, 2, 3, 1)`` is a
            contiguous [N, H, W, 3] view).
        pts_seconds: float64 Tensor[N], each frame's presentation time in seconds.
        ok: bool Tensor[N]: False for frames the decoder flagged as damaged, or (zero-filled) could not
            produce; only ever False with ``strict=False`` (the polarity of the batch functions' ``ok``).
    """

    data: torch.Tensor
    pts_seconds: torch.Tensor
    ok: torch.Tensor

    def __repr__(self) -> str:
        return shapes_repr(self)


@dataclasses.dataclass(frozen=True, repr=False)
class VideoClips:
    """The result of :func:`~spdl_torch.io.decode_video_clips`, whatever ``strict`` is.

    Attributes:
        data: Tensor[B, N, T, 3, H, W] (``dimension_order="NCTHW"``: [B, N, 3, T, H, W]) of the requested dtype:
            B videos, ``num_clips`` N, ``num_frames_per_clip`` T.
        ok: bool Tensor[B]: False for videos that failed and were zero-filled (only with ``strict=False``).
        indices: int64 Tensor[B, N, T]: each clip frame's index in its video (-1 for a failed video).
    """

    data: torch.Tensor
    ok: torch.Tensor
    indices: torch.Tensor

    def __repr__(self) -> str:
        return shapes_repr(self)


@dataclasses.dataclass(frozen=True, repr=False)
class AudioSamples:
    """The result of :func:`~spdl_torch.io.decode_audio` (torchcodec's ``AudioSamples``: its fields, and like
    it iterable over them, so ``data, pts_seconds, duration_seconds, sample_rate = decode_audio(...)`` works).

    Attributes:
        data: Tensor[C, N] (float32 or int16): C channels, N samples per channel at ``sample_rate``.
        pts_seconds: the time of ``data[:, 0]``, seconds from the first decoded sample (the window's start,
            ``round(start_seconds * r) / r``; 0.0 for a whole decode).
        duration_seconds: ``N / sample_rate``.
        sample_rate: the output rate in Hz (the stream's when ``sample_rate=None``).
    """

    data: torch.Tensor
    pts_seconds: float
    duration_seconds: float
    sample_rate: int

    def __iter__(self):
        return (getattr(self, f.name) for f in dataclasses.fields(self))

    def __repr__(self) -> str:
        return shapes_repr(self)


@dataclasses.dataclass(frozen=True, repr=False)
class AudioBatch:
    """The result of :func:`~spdl_torch.io.decode_audio_batch`.

    Attributes:
        data: Tensor[B, C, N] (float32 or int16): sample i's audio in ``data[i, :, :lengths[i]]``, zero padding
            after it.
        lengths: int64 Tensor[B]: the real samples of each slot (0 for a failed sample, ``strict=False``).
        offsets: int64 Tensor[B]: the index, in the whole decode of its file at the output rate, of each
            slot's first sample (the window's start; 0 for whole files).
        ok: bool Tensor[B]: the samples that decoded (all True with ``strict=True``).
        sample_rate: the batch's rate in Hz (the ``sample_rate`` argument).
    """

    data: torch.Tensor
    lengths: torch.Tensor
    offsets: torch.Tensor
    ok: torch.Tensor
    sample_rate: int

    def __repr__(self) -> str:
        return shapes_repr(self)


@dataclasses.dataclass(frozen=True)
class VideoStreamMetadata:
    """A video stream's header, read without decoding frames (torchcodec's ``VideoStreamMetadata`` names).

    Attributes:
        num_frames_from_header: the frame count the container's header states (``None``: it states none).
        num_frames_from_content: the frames counted from the packets (exact; ``None`` unless
            ``count_frames=True`` or the header states no count).
        num_frames: the count :func:`~spdl_torch.io.decode_video_frames` addresses: ``num_frames_from_content``
            when counted, else ``num_frames_from_header`` (``None`` when neither is known; a property).
        average_fps: average frames per second (``None`` when unknown).
        duration_seconds: the stream's duration in seconds from the header (``None`` when unknown).
        begin_stream_seconds_from_header: the header's start time in seconds (0.0 when the container has none):
            ``seek_mode="approximate"`` counts frame ``i`` from it. The first frame may be displayed later (an AVI
            with B-frames stores decode times only: its first frame shows one frame after the header's start; an
            edited MP4 or MKV can differ either way): the frames' own span is ``begin_stream_seconds``.
        begin_stream_seconds, end_stream_seconds: the span ``[begin, end)`` seconds in which the stream's
            frames are displayed, the timestamps :func:`~spdl_torch.io.decode_video_frames` accepts with the same
            ``seek_mode``. Exact: frame 0's pts and the last frame's pts plus its duration, from the frame index;
            approximate: ``begin_stream_seconds_from_header`` and that plus ``num_frames / average_fps``.
            ``None`` where no timestamp names a frame (exact: timestamps that do not increase, or a stream
            without an index; approximate: ``end_stream_seconds`` of a header with no count, duration or rate).
        width, height: the displayed frame size, in pixels, after ``rotation`` (the shape
            :func:`~spdl_torch.io.decode_video_frames` returns).
        coded_width, coded_height: the decoded frame size before the rotation.
        rotation: clockwise degrees (0, 90, 180, 270) the display matrix asks for (phone videos).
        codec: FFmpeg's codec name (``"h264"``, ``"vp9"``, ...); ``pixel_format``: e.g. ``"yuv420p"``.
        container: libavformat's demuxer name (``"mov,mp4,m4a,3gp,3g2,mj2"``, ``"matroska,webm"``, ...).
        time_base: seconds per pts unit (``fractions.Fraction``).
        bit_rate: bits per second (``None`` when unknown).
        key_frame_seconds: the key frames' presentation times (seconds, ascending; ``seconds=`` of each names
            that key frame): exact, the pts of the frames whose packets are flagged key (ffprobe's ``K``);
            approximate (the header only), the container index's entries: for MP4 with B-frames their decode
            times, which precede the pts by the reorder delay; empty when the container has no index (Matroska
            before a seek).
        stream_index: the index of the stream in the container.
    """

    num_frames_from_header: int | None
    num_frames_from_content: int | None
    average_fps: float | None
    duration_seconds: float | None
    begin_stream_seconds_from_header: float
    begin_stream_seconds: float | None
    end_stream_seconds: float | None
    width: int
    height: int
    coded_width: int
    coded_height: int
    rotation: int
    codec: str
    pixel_format: str
    container: str
    time_base: fractions.Fraction
    bit_rate: int | None
    key_frame_seconds: list[float]
    stream_index: int

    @property
    def num_frames(self) -> int | None:
        """``num_frames_from_content`` when the frames were counted, else ``num_frames_from_header``."""
        return self.num_frames_from_content if self.num_frames_from_content is not None else \
            self.num_frames_from_header


@dataclasses.dataclass(frozen=True)
class AudioStreamMetadata:
    """What the container and the codec parameters state about the best audio stream, nothing decoded
    (torchcodec's ``AudioStreamMetadata`` names).

    Attributes:
        sample_rate: samples per second per channel (Hz).
        num_channels: channels.
        duration_seconds: the stream's duration (else the container's) in seconds; ``None`` when not stated.
        num_frames: samples per channel that the stream's duration states (``None`` when not stated). For
            MP3 / AAC / Opus it may include the encoder's priming and padding, which decoding removes.
        channel_layout: FFmpeg's name of the layout (``"mono"``, ``"stereo"``, ``"5.1(side)"``,
            ``"2 channels"`` when the file does not say which).
        codec: FFmpeg's codec name (``"pcm_s16le"``, ``"flac"``, ``"mp3"``, ``"vorbis"``, ``"opus"``).
        sample_format: the decoder's sample format (``"s16"``, ``"s32"``, ``"fltp"``, ...).
        container: libavformat's demuxer name (``"wav"``, ``"ogg"``, ``"mp3"``, ``"matroska,webm"``).
        bit_rate: bits per second, ``None`` when not stated.
        stream_index: the index of the stream in the container.
    """

    sample_rate: int
    num_channels: int
    duration_seconds: float | None
    num_frames: int | None
    channel_layout: str
    codec: str
    sample_format: str
    container: str
    bit_rate: int | None
    stream_index: int
