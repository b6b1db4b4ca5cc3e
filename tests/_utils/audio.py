"""Audio test media and references: synthetic files made with the ffmpeg CLI (lavfi sources) and the CLI's
own decoded samples, the reference every audio test compares with."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import torch

FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")

# Encoders the synthetic grid uses, with a sample format each supports (ffmpeg -h encoder=...), and the
# container.
SYNTH_CODECS = {
    # name: (container suffix, encoder, sample formats)
    "pcm_u8": (".wav", "pcm_u8", ["u8"]),
    "pcm_s16le": (".wav", "pcm_s16le", ["s16"]),
    "pcm_s24le": (".wav", "pcm_s24le", ["s32"]),
    "pcm_s32le": (".wav", "pcm_s32le", ["s32"]),
    "pcm_f32le": (".wav", "pcm_f32le", ["flt"]),
    "pcm_f64le": (".wav", "pcm_f64le", ["dbl"]),
    "flac16": (".flac", "flac", ["s16"]),
    "flac24": (".flac", "flac", ["s32"]),
    "mp3": (".mp3", "libmp3lame", ["s16p", "fltp"]),
    "vorbis": (".ogg", "libvorbis", ["fltp"]),
    "opus": (".opus", "libopus", ["s16", "flt"]),
}
LAYOUTS = {1: "mono", 2: "stereo", 6: "5.1"}


def have_encoder(name: str) -> bool:
    out = subprocess.run([FFMPEG, "-hide_banner", "-encoders"], capture_output=True, text=True).stdout
    return any(line.split()[1:2] == [name] for line in out.splitlines() if len(line.split()) > 1)


def make_audio(path: Path, *, rate: int, channels: int, codec: str, sample_fmt: str | None = None,
               seconds: float = 0.5, source: str = "sine") -> Path:
    """A synthetic file: lavfi sine (a different frequency per channel) or anoisesrc, encoded by `codec`."""
    suffix, encoder, fmts = SYNTH_CODECS[codec]
    sample_fmt = sample_fmt or fmts[0]
    layout = LAYOUTS[channels]
    if source == "sine":
        inputs = []
        for c in range(channels):
            inputs += ["-f", "lavfi", "-i", f"sine=frequency={220 * (c + 1) + 17 * c}:sample_rate={rate}:duration={seconds}"]
        if channels == 1:
            graph = ["-af", "volume=0.9"]
        else:
            pads = "".join(f"[{c}:a]" for c in range(channels))
            graph = ["-filter_complex", f"{pads}amerge=inputs={channels},volume=0.9"]
    else:
        inputs = ["-f", "lavfi", "-i", f"anoisesrc=color=pink:sample_rate={rate}:duration={seconds}:amplitude=0.5:seed=7"]
        graph = ["-af", f"aformat=channel_layouts={layout}" if channels > 1 else "anull"]
    extra = ["-ar", "48000"] if codec == "opus" else []
    cmd = [FFMPEG, "-nostdin", "-v", "error", "-y", *inputs, *graph, "-ac", str(channels),
           "-channel_layout", layout, "-c:a", encoder, "-sample_fmt", sample_fmt, *extra, str(path)]
    subprocess.run(cmd, check=True, capture_output=True)
    return path


def cli_samples(path, *, sample_rate: int | None = None, num_channels: int | None = None,
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ffmpeg CLI's samples of the best audio stream as Tensor[C, N] (`-f f32le` / `-f s16le`)."""
    fmt, np_dtype = ("f32le", np.float32) if dtype == torch.float32 else ("s16le", np.int16)
    cmd = [FFMPEG, "-nostdin", "-v", "error", "-i", str(path), "-vn", "-sn", "-dn"]
    if sample_rate:
        cmd += ["-ar", str(sample_rate)]
    if num_channels:
        cmd += ["-ac", str(num_channels)]
    cmd += ["-f", fmt, "-acodec", f"pcm_{fmt}", "-"]
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    channels = num_channels or probe_channels(path)
    data = np.frombuffer(raw, dtype=np_dtype).reshape(-1, channels)
    return torch.from_numpy(data.T.copy())


def probe_channels(path) -> int:
    out = subprocess.run([FFPROBE, "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=channels",
                          "-of", "default=nw=1:nk=1", str(path)], check=True, capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[0])


def probe(path) -> dict:
    """ffprobe's view of the first audio stream: sample_rate, channels, codec_name, sample_fmt, duration."""
    out = subprocess.run([FFPROBE, "-v", "error", "-select_streams", "a:0", "-show_entries",
                          "stream=sample_rate,channels,codec_name,sample_fmt,duration,channel_layout",
                          "-of", "default=nw=1", str(path)], check=True, capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.strip().splitlines() if "=" in line)
