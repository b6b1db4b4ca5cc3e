"""The audio functions' argument checks: ints that are ints (not bools or floats) in range, seconds, seeds,
the batch-wide arguments, and the default output cap read at each call."""

from __future__ import annotations

import math

import torch

from ._integers import as_integer
from ._limits import default

# The native limits: the largest sample rate (core kMaxAudioSampleRate) and int64.
MAX_SAMPLE_RATE = 1 << 20
_INT64_MAX = 2**63 - 1

_DTYPES = (torch.float32, torch.int16)

#: The default ``seek_mode`` of :func:`decode_audio`, :func:`decode_audio_batch` and ``AudioDataset``.
DEFAULT_SEEK_MODE = "approximate"
SEEK_MODES = ("exact", "approximate")


def window_samples(duration: float, sample_rate: int) -> int:
    """Samples in a window of ``duration`` seconds at ``sample_rate`` Hz: ``floor(duration * rate + 0.5)``
    (the native ``audio_sample_index`` rule)."""
    return int(math.floor(float(duration) * float(sample_rate) + 0.5))


def default_max_samples() -> int:
    """The limit of ``max_samples=None``: ``spdl_torch.io.limits.audio_samples`` as the user set it, read at each
    call."""
    return default("audio_samples")


def _int_arg(op: str, name: str, value, lo: int, hi: int, what: str = ""):
    """``value`` as an int in [lo, hi] (Python, NumPy or torch integers), or None; ValueError for anything else
    (a bool, a float, an int out of range)."""
    if value is None:
        return None
    number = as_integer(value)
    if number is not None and lo <= number <= hi:
        return number
    raise ValueError(f"{op}: expected {name} as an int in [{lo}, {hi}]{what} or None, got {name}={value!r}")


def _seconds(op: str, name: str, value) -> float:
    """``value`` (seconds: an int or float, not a bool or a string) as a float; ValueError otherwise."""
    if not isinstance(value, (bool, str, bytes)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"{op}: expected {name} as a number of seconds, got {name}={value!r}")


def _check_common(op: str, sample_rate, num_channels, dtype, max_samples) -> tuple:
    """``(sample_rate, num_channels, max_samples)`` as ints (or None), checked; ValueError naming the bad one."""
    sample_rate = _int_arg(op, "sample_rate", sample_rate, 1, MAX_SAMPLE_RATE, " (Hz)")
    num_channels = _int_arg(op, "num_channels", num_channels, 1, 64)
    if dtype not in _DTYPES:
        raise ValueError(f"{op}: expected dtype torch.float32 or torch.int16, got {dtype=}")
    max_samples = _int_arg(op, "max_samples", max_samples, 1, _INT64_MAX)
    return sample_rate, num_channels, max_samples


def seek_mode_arg(op: str, seek_mode) -> str:
    """``seek_mode`` checked: ``"exact"`` or ``"approximate"``; ValueError otherwise."""
    if not isinstance(seek_mode, str) or seek_mode not in SEEK_MODES:
        raise ValueError(f"{op}: expected seek_mode 'exact' or 'approximate', got {seek_mode=!r}")
    return seek_mode


def _seeds(op: str, seeds, n: int) -> torch.Tensor:
    """``seeds`` as an int64 Tensor[n]: an integer tensor, or a sequence of ints in the int64 range; a float,
    bool or out-of-range seed is a ValueError (it would be truncated or wrapped)."""
    if isinstance(seeds, torch.Tensor):
        if seeds.dtype.is_floating_point or seeds.dtype.is_complex or seeds.dtype == torch.bool:
            raise ValueError(f"{op}: expected integer seeds, got a tensor of {seeds.dtype}")
        seeds = seeds.to(torch.int64)
    else:
        values = []
        for v in seeds:
            number = as_integer(v)
            if number is None or not -(2**63) <= number <= _INT64_MAX:
                raise ValueError(f"{op}: expected int seeds in the int64 range, got {v!r}")
            values.append(number)
        seeds = torch.tensor(values, dtype=torch.int64)
    if seeds.shape != (n,):
        raise ValueError(f"{op}: expected {n} seeds, got shape {tuple(seeds.shape)}")
    return seeds


def check_batch_args(op: str, sample_rate, num_channels, duration, dtype, max_samples) -> tuple:
    """The checks of :func:`decode_audio_batch`'s batch-wide arguments (also run by ``AudioDataset`` when it is
    made); returns ``(sample_rate, num_channels, duration, max_samples)``: ints, duration as a float (or None),
    max_samples as given (or None).

    Raises:
        ValueError: a missing rate or layout, a bad dtype or limit, a duration <= 0, under one sample or over
            1e6 seconds, a bool or float where an int belongs.
    """
    if sample_rate is None or num_channels is None:
        raise ValueError(f"{op}: expected sample_rate and num_channels (one batch has one rate and layout)")
    sample_rate, num_channels, max_samples = _check_common(op, sample_rate, num_channels, dtype, max_samples)
    if duration is None:
        return sample_rate, num_channels, None, max_samples
    duration = _seconds(op, "duration", duration)
    if not math.isfinite(duration) or duration <= 0:
        raise ValueError(f"{op}: expected duration as seconds > 0 or None, got {duration=}")
    if duration > 1e6:  # the native bound, checked before a window's sample count is printed
        raise ValueError(f"{op}: expected duration at most 1e6 seconds, got {duration=:.6g} s")
    if window_samples(duration, sample_rate) < 1:
        raise ValueError(f"{op}: {duration=} s is under one sample at {sample_rate} Hz")
    return sample_rate, num_channels, duration, max_samples
