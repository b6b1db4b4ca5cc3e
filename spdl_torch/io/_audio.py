"""Audio: ``audio_metadata``, ``decode_audio`` and ``decode_audio_batch`` over FFmpeg (libavformat,
libavcodec, libswresample), with their fake kernels.

The samples equal the ``ffmpeg`` CLI's: ``ffmpeg -i F -f f32le -acodec pcm_f32le -`` (with ``-ar R`` /
``-ac C`` when resampling or mixing; libswresample's default options, as the CLI's auto-inserted
``aresample`` filter uses them), transposed from interleaved ``[N, C]`` to ``[C, N]``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence

import torch

from .._audio_args import (DEFAULT_SEEK_MODE, _check_common, _seconds, _seeds, check_batch_args, default_max_samples,
                           seek_mode_arg, window_samples)
from .._batch_order import before_batch_op
from .._errors import name_sample, translate
from .._limits import DEFAULTS
from ._results import AudioBatch, AudioSamples, AudioStreamMetadata

__all__ = ["audio_metadata", "decode_audio", "decode_audio_batch"]

# torch.frombuffer warns for read-only buffers such as bytes; the ops never write to their input.
warnings.filterwarnings("ignore", message="The given buffer is not writable", module=__name__)


def _audio_fake(c, *, num_channels=0, dtype=None):
    ctx = torch.library.get_ctx()
    channels = num_channels if num_channels > 0 else ctx.new_dynamic_size()
    data = torch.empty((channels, ctx.new_dynamic_size()), dtype=torch.float32 if dtype is None else dtype)
    return data, torch.empty((), dtype=torch.int64)


@torch.library.register_fake("spdl_torch::decode_audio")
def _decode_audio_fake(data, *, sample_rate=0, num_channels=0, start_seconds=0.0, stop_seconds=None, dtype=None,
                       strict=True, max_samples=DEFAULTS["audio_samples"], seek_mode=DEFAULT_SEEK_MODE):
    torch._check(data.dtype == torch.uint8, lambda: f"decode_audio: expected uint8 data, got {data.dtype}")
    torch._check(data.dim() == 1, lambda: f"decode_audio: expected 1-D data, got {data.dim()} dimensions")
    return _audio_fake(data, num_channels=num_channels, dtype=dtype)


@torch.library.register_fake("spdl_torch::decode_audio_file")
def _decode_audio_file_fake(path, *, sample_rate=0, num_channels=0, start_seconds=0.0, stop_seconds=None, dtype=None,
                            strict=True, max_samples=DEFAULTS["audio_samples"], seek_mode=DEFAULT_SEEK_MODE):
    return _audio_fake(None, num_channels=num_channels, dtype=dtype)


@torch.library.register_fake("spdl_torch::decode_audio_batch")
def _decode_audio_batch_fake(data, paths, *, sample_rate, num_channels, duration=-1.0, starts=None, seeds=None,
                             dtype=None, pin_memory=False, strict=True, max_samples=DEFAULTS["audio_samples"],
                             seek_mode=DEFAULT_SEEK_MODE):
    n = len(data) if len(data) else len(paths)
    length = window_samples(duration, sample_rate) if duration > 0 else torch.library.get_ctx().new_dynamic_size()
    batch = torch.empty((n, num_channels, length), dtype=torch.float32 if dtype is None else dtype)
    lengths = torch.empty((n,), dtype=torch.int64)
    offsets = torch.empty((n,), dtype=torch.int64)
    ok = torch.empty((n,), dtype=torch.bool)
    return batch, lengths, offsets, ok


def _source(src, op: str):
    """(op's data argument or path, the name errors use, the path or None)."""
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        if "\0" in path:
            raise ValueError(f"{op}: embedded null byte in path {path!r}")
        return path, path, path
    if isinstance(src, torch.Tensor):
        return src, None, None
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = torch.frombuffer(src, dtype=torch.uint8) if len(src) else torch.empty(0, dtype=torch.uint8)
        return data, "<bytes>", None
    raise TypeError(f"{op}: expected a path, bytes or a 1-D uint8 tensor, got {type(src).__name__}")


def audio_metadata(src: str | os.PathLike | bytes | bytearray | memoryview | torch.Tensor) -> AudioStreamMetadata:
    """The best audio stream's metadata, read from the container without decoding, without the GIL.

    Args:
        src: a file path, the encoded bytes, or a 1-D uint8 CPU tensor of them (read in place).

    Returns:
        :class:`AudioStreamMetadata`.

    Raises:
        DecodeError: no audio stream (a video-only file), an unknown codec, or unreadable data; the message
            names the file (path or ``<bytes>``) and FFmpeg's reason; ``.path`` is the path.
        FileNotFoundError, PermissionError, OSError: the path cannot be opened.
    """
    arg, name, path = _source(src, "audio_metadata")
    try:
        if path is not None:
            ints, strs, duration = torch.ops.spdl_torch.audio_metadata_file(arg)
        else:
            ints, strs, duration = torch.ops.spdl_torch.audio_metadata(arg)
    except RuntimeError as e:
        raise translate(e, name, path=path) from None
    sample_rate, num_channels, num_frames, bit_rate, stream_index = ints
    codec, sample_format, layout, fmt = strs
    return AudioStreamMetadata(
        sample_rate=sample_rate, num_channels=num_channels,
        duration_seconds=duration if duration >= 0 else None, num_frames=num_frames if num_frames >= 0 else None,
        channel_layout=layout, codec=codec, sample_format=sample_format, container=fmt,
        bit_rate=bit_rate if bit_rate > 0 else None, stream_index=stream_index,
    )


def decode_audio(
    src: str | os.PathLike | bytes | bytearray | memoryview | torch.Tensor,
    *,
    sample_rate: int | None = None,
    num_channels: int | None = None,
    start_seconds: float = 0.0,
    stop_seconds: float | None = None,
    dtype: torch.dtype = torch.float32,
    strict: bool = True,
    max_samples: int | None = None,
    seek_mode: str = DEFAULT_SEEK_MODE,
) -> AudioSamples:
    """Decodes the best audio stream (or the window ``[start_seconds, stop_seconds)`` of it) without the GIL.

    The samples are the ``ffmpeg`` CLI's, bit for bit: ``ffmpeg -i src -f f32le -acodec pcm_f32le -``
    (``-f s16le -acodec pcm_s16le`` for int16), with ``-ar sample_rate`` / ``-ac num_channels`` when given,
    transposed to ``[C, N]``. That is: the decoder drops the encoder's priming and padding samples (MP3's
    LAME header, Opus pre-skip, AAC: the ``skip_samples`` FFmpeg signals); libswresample converts, mixes and
    resamples with its default options (a 32-tap polyphase filter, its delay drained at the end); mixing to
    ``num_channels`` follows the CLI's ``-ac`` rule (FFmpeg's default layout for that count, libswresample's
    default matrix, e.g. stereo -> mono ``(L + R) * 0.7071`` with no renormalisation for float output); an
    unspecified input layout is FFmpeg's default layout for its channel count, as the CLI guesses it.

    Windows: times are seconds from the first decoded sample; the window holds the samples of the whole
    decode (at the output rate r) with indices ``[round(start * r), round(stop * r))`` (start, stop:
    ``start_seconds``, ``stop_seconds``), rounding half up, so ``stop - start = d`` gives ``round(d * r)``
    samples whenever ``start * r`` is whole, and consecutive
    windows ``[a, b)``, ``[b, c)`` concatenate to exactly the samples of ``[a, c)`` (the resampler's state at
    the boundary is the whole decode's). A window that runs past the end is cut at the end; one that starts
    at or after the end raises ``IndexError``. A late window of WAV, FLAC, MP3, Ogg Vorbis and ALAC in MP4 is
    reached by seeking and decoding a pre-roll before it, with the same samples bit for bit; with
    ``seek_mode="approximate"`` so are Ogg Opus (1 s of pre-roll: within 2e-5 of the whole decode's samples,
    the bound ``docs/audio.md`` states) and AAC-LC in MP4 (bit for bit but for noise-substituted bands, which
    hold other noise of the same energy); other inputs decode the input before the window.

    Args:
        src: a file path (opened by FFmpeg), the encoded bytes, or a 1-D uint8 CPU tensor of them (read in
            place through a custom AVIO context, no copy).
        sample_rate: output rate in Hz; ``None``: the stream's.
        num_channels: output channels (1 to 64); ``None``: the stream's.
        start_seconds, stop_seconds: the window in seconds (``stop_seconds=None``: to the end; torchcodec's
            names).
        dtype: ``torch.float32`` (values nominally in [-1, 1]: s16 / 32768, s32 / 2**31; lossy decoders and
            mixing can exceed it slightly, as in the CLI's output) or ``torch.int16``.
        strict: raise on a packet the decoder rejects and on a PCM / FLAC stream shorter than its header
            states; ``False``: skip the bad packets (as the CLI does) and return what decoded.
        max_samples: refuse outputs over this many samples (all channels); ``None``:
            :data:`spdl_torch.io.limits.audio_samples` (1 Gi samples; set that attribute to raise the default).
        seek_mode: ``"approximate"`` (the default: a window of Ogg Opus or AAC in MP4 is reached by seeking,
            as above) or ``"exact"`` (bit for bit the whole decode's for every format: Opus and AAC decode from
            their start, torchcodec's ``seek_mode="exact"``). Every other format is exact in both modes.

    Defaults as torchcodec's ``AudioDecoder``: the stream's rate and channels, float32 in [-1, 1]; the result
    carries its rate, as torchcodec's ``AudioSamples`` does.

    Returns:
        :class:`AudioSamples` ``(data, pts_seconds, duration_seconds, sample_rate)``: ``data`` Tensor[C, N] of
        ``dtype``, C channels, N samples per channel at ``sample_rate`` Hz.

    Raises:
        DecodeError: corrupt, truncated or zero-length input, no audio stream, an unsupported codec, an
            absurd rate or channel count, or an output over ``max_samples``; the message names the file
            (path or ``<bytes>``) and FFmpeg's reason; ``.path`` is the path (``None`` for bytes).
        IndexError: the window starts at or after the end of the stream (the message gives its length).
        FileNotFoundError, PermissionError, OSError: the path cannot be opened.
        ValueError: an invalid argument (a bool or float where an int belongs, a rate over 2**20 Hz, an unknown
            ``seek_mode``).
    """
    sample_rate, num_channels, max_samples = _check_common("decode_audio", sample_rate, num_channels, dtype,
                                                           max_samples)
    seek_mode = seek_mode_arg("decode_audio", seek_mode)
    start = _seconds("decode_audio", "start_seconds", start_seconds)
    if not math.isfinite(start) or start < 0:
        raise ValueError(f"decode_audio: expected start_seconds >= 0, got {start_seconds=}")
    stop = None
    if stop_seconds is not None:
        stop = _seconds("decode_audio", "stop_seconds", stop_seconds)
        if not math.isfinite(stop) or stop < start:
            raise ValueError(f"decode_audio: expected stop_seconds >= start_seconds ({start} s) or None, got "
                             f"{stop_seconds=}")
    arg, name, path = _source(src, "decode_audio")
    kwargs = dict(sample_rate=sample_rate or 0, num_channels=num_channels or 0, start_seconds=start, stop_seconds=stop,
                  dtype=dtype, strict=bool(strict), max_samples=max_samples or default_max_samples(),
                  seek_mode=seek_mode)
    try:
        if path is not None:
            data, rate = torch.ops.spdl_torch.decode_audio_file(arg, **kwargs)
        else:
            data, rate = torch.ops.spdl_torch.decode_audio(arg, **kwargs)
    except IndexError as e:
        raise IndexError(f"{name}: {e}" if name else str(e)) from None
    except RuntimeError as e:
        raise translate(e, name, path=path) from None
    rate = int(rate)
    first = window_samples(start, rate)
    return AudioSamples(data, first / rate, data.shape[-1] / rate, int(rate))


def decode_audio_batch(
    srcs: Sequence[str | os.PathLike | bytes | bytearray | memoryview | torch.Tensor],
    *,
    sample_rate: int,
    num_channels: int,
    duration: float | None = None,
    starts: Sequence[float] | None = None,
    seeds: torch.Tensor | Sequence[int] | None = None,
    dtype: torch.dtype = torch.float32,
    pin_memory: bool = False,
    strict: bool = True,
    max_samples: int | None = None,
    seek_mode: str = DEFAULT_SEEK_MODE,
) -> AudioBatch:
    """Decodes B audio inputs into one padded batch in a single native call, without the GIL.

    Each sample is decoded, mixed to ``num_channels`` and resampled to ``sample_rate`` exactly as
    :func:`decode_audio` does (its own resampler, configured for that file's rate and layout), on the
    library's native thread pool, largest input first, straight into its slot of the batch.

    What each slot holds:
        * ``duration=None``: the whole file; N is the longest file's length, shorter ones zero-padded.
        * ``duration=d`` and ``starts``: the window ``[starts[i], starts[i] + d)``: N = ``round(d * r)``
          samples from index ``round(starts[i] * r)`` of the whole decode.
        * ``duration=d`` and ``seeds``: a random crop of N = ``round(d * r)`` samples starting at
          ``randint(L - N + 1)`` drawn from SplitMix64 started at ``seeds[i]``, L the file's length at the
          output rate as the container states it (a file no longer than N starts at 0). So the crop depends
          only on the seed and the header (``spdl_torch.datasets.AudioDataset`` passes seeds from
          ``(seed, epoch, index)``). When the stream ends before that crop does (a truncated file, a header
          that overstates the length), the start is drawn again from the same seed with L the decoded
          length: still reproducible (seed and file), and a crop is only shorter than N (``lengths``) when
          the whole decoded file is.
        * ``duration=d`` alone: the first d seconds.
        A window past the end of its file is zero-padded; ``lengths`` counts the real samples.

    Args:
        srcs: B >= 1 inputs: all paths (opened by FFmpeg in the native threads) or all bytes / 1-D uint8
            CPU tensors (read in place).
        sample_rate: output rate in Hz (required: one batch has one rate).
        num_channels: output channels (required), mixed by the CLI's ``-ac`` rule.
        duration: window length in seconds (at most 1e6), or None for whole files.
        starts: per-sample window starts in seconds (with ``duration``).
        seeds: per-sample int64 seeds for random crops (with ``duration``).
        dtype: ``torch.float32`` or ``torch.int16``.
        pin_memory: allocate the batch in pinned memory (torch's caching host allocator; needs CUDA).
        strict: raise on the first bad sample; ``False``: zero its slot, ``ok[i] = False``.
        max_samples: cap on the whole batch, B x C x N samples (padding included); ``None``:
            :data:`spdl_torch.io.limits.audio_samples` (1 Gi samples, 4 GiB of float32; set that attribute to
            raise the default). Windows are checked before anything is decoded; whole files stop decoding
            once a file passes ``max_samples / B`` samples (all channels), since the batch padded to it
            could not fit.
        seek_mode: ``"approximate"`` (the default) or ``"exact"``: as :func:`decode_audio` (Ogg Opus and AAC
            windows by seeking, or bit for bit from a decode from the start).

    Returns:
        :class:`AudioBatch` ``(data [B, C, N], lengths [B], offsets [B], ok [B], sample_rate)``.

    Raises:
        DecodeError: a sample could not be decoded (``strict``): the message names its path (or ``sample
            i``) and FFmpeg's reason; ``.sample_index`` is i, ``.path`` its path.
        FileNotFoundError, PermissionError, OSError: a path cannot be opened (``strict``; the message names
            it; ``strict=False``: ``ok[i] = False`` like a bad file).
        ValueError: an invalid argument (a bool or float where an int belongs, a float seed), or a batch over
            ``max_samples`` (whatever ``strict`` is; the message gives the size and, for whole files, the
            file that passed its share), an unknown ``seek_mode``.
    """
    op = "decode_audio_batch"
    sample_rate, num_channels, duration, max_samples = check_batch_args(op, sample_rate, num_channels, duration,
                                                                        dtype, max_samples)
    seek_mode = seek_mode_arg(op, seek_mode)
    srcs = list(srcs)
    if not srcs:
        raise ValueError(f"{op}: expected at least one input, got none")
    if duration is None and (starts is not None or seeds is not None):
        raise ValueError(f"{op}: starts and seeds need a duration")
    if starts is not None and seeds is not None:
        raise ValueError(f"{op}: expected starts or seeds, not both")
    if starts is not None:
        starts = [_seconds(op, "starts", s) for s in starts]
        if len(starts) != len(srcs) or any(not math.isfinite(s) or s < 0 for s in starts):
            raise ValueError(f"{op}: expected {len(srcs)} starts >= 0 seconds, got {starts}")
    if seeds is not None:
        seeds = _seeds(op, seeds, len(srcs))
    limit = max_samples or default_max_samples()
    if duration is not None and len(srcs) * num_channels * window_samples(duration, sample_rate) > limit:
        raise ValueError(f"{op}: a batch of {len(srcs)} x {num_channels} channels x "
                         f"{window_samples(duration, sample_rate)} samples exceeds max_samples = {limit}; pass a "
                         f"larger max_samples or raise spdl_torch.io.limits.audio_samples")
    is_path = [isinstance(s, (str, os.PathLike)) for s in srcs]
    if any(is_path) and not all(is_path):
        raise ValueError(f"{op}: expected all inputs as paths or all as bytes / tensors, not a mix")
    paths, data, names = [], [], []
    for s in srcs:
        arg, name, path = _source(s, op)
        names.append(path)
        (paths if path is not None else data).append(arg)
    before_batch_op()
    try:
        batch, lengths, offsets, ok = torch.ops.spdl_torch.decode_audio_batch(
            data, paths, sample_rate=sample_rate, num_channels=num_channels,
            duration=duration if duration is not None else -1.0, starts=starts, seeds=seeds, dtype=dtype,
            pin_memory=bool(pin_memory), strict=bool(strict), max_samples=limit, seek_mode=seek_mode)
    except RuntimeError as e:
        raise name_sample(translate(e, None), names) from None
    return AudioBatch(batch, lengths, offsets, ok, sample_rate)
