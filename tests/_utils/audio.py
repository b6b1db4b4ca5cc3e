"""Audio test media and references: synthetic files made with the ffmpeg CLI (lavfi sources) and the CLI's
own decoded samples, the reference every audio test compares with."""

from __future__ import annotations

import shutil
import struct
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


def make_long(path: Path, *, seconds: float, rate: int = 48000, channels: int = 2, codec_args: list[str]) -> Path:
    """A file of `seconds` of a sine under pink noise (lavfi), encoded with the CLI's `codec_args`."""
    layout = LAYOUTS[channels]
    cmd = [FFMPEG, "-nostdin", "-v", "error", "-y",
           "-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={rate}:duration={seconds}",
           "-f", "lavfi", "-i", f"anoisesrc=color=pink:sample_rate={rate}:duration={seconds}:amplitude=0.3:seed=11",
           "-filter_complex", f"[0:a][1:a]amix=inputs=2,aformat=channel_layouts={layout}", "-ac", str(channels),
           *codec_args, str(path)]
    subprocess.run(cmd, check=True, capture_output=True)
    return path


# Ogg pages (RFC 3533): the CRC is CRC-32 with polynomial 0x04c11db7, no reflection, initial value 0, computed
# with the CRC field zeroed.
def _ogg_crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table


_OGG_CRC = _ogg_crc_table()


def ogg_pages(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of every page of an Ogg file, in order."""
    pages, at = [], 0
    while at + 27 <= len(data) and data[at:at + 4] == b"OggS":
        segments = data[at + 26]
        body = sum(data[at + 27:at + 27 + segments])
        pages.append((at, 27 + segments + body))
        at += 27 + segments + body
    return pages


def ogg_fix_crc(data: bytearray, offset: int, length: int) -> None:
    page = bytearray(data[offset:offset + length])
    page[22:26] = b"\0\0\0\0"
    crc = 0
    for b in page:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC[((crc >> 24) ^ b) & 0xFF]
    data[offset + 22:offset + 26] = crc.to_bytes(4, "little")


def ogg_set_granule(data: bytes, page: int, granule: int) -> bytes:
    """`data` with page `page`'s granule position set to `granule` (-1: no packet ends on it), CRC fixed."""
    out = bytearray(data)
    offset, length = ogg_pages(data)[page]
    out[offset + 6:offset + 14] = (granule & (2**64 - 1)).to_bytes(8, "little")
    ogg_fix_crc(out, offset, length)
    return bytes(out)


def opus_set_pre_skip(data: bytes, pre_skip: int) -> bytes:
    """An Ogg Opus file with its OpusHead pre-skip field (RFC 7845 5.1) rewritten, CRC fixed: the same size."""
    out = bytearray(data)
    offset, length = ogg_pages(data)[0]
    head = out.index(b"OpusHead", offset)
    out[head + 10:head + 12] = pre_skip.to_bytes(2, "little")
    ogg_fix_crc(out, offset, length)
    return bytes(out)


def raw_pcm(path, fmt: str) -> bytes:
    """The CLI's raw samples of `path` in sample format `fmt` (`ffmpeg -f FMT`: u8, s16le, s24le, s32le, f32le,
    f64le, alaw, mulaw)."""
    cmd = [FFMPEG, "-nostdin", "-v", "error", "-i", str(path), "-f", fmt, "-acodec",
           {"u8": "pcm_u8", "alaw": "pcm_alaw", "mulaw": "pcm_mulaw"}.get(fmt, f"pcm_{fmt}"), "-"]
    return subprocess.run(cmd, check=True, capture_output=True).stdout


def riff_chunk(tag: bytes, body: bytes, *, size: int | None = None) -> bytes:
    """A RIFF chunk: tag, size (the body's unless given) and the body with its pad byte when odd."""
    return tag + struct.pack("<I", len(body) if size is None else size) + body + (b"\0" if len(body) % 2 else b"")


def wav_fmt(*, tag: int, channels: int, rate: int, bits: int, block_align: int | None = None,
            extensible: tuple[int, int] | None = None, cb_size: int | None = None) -> bytes:
    """A fmt chunk body: WAVEFORMAT(EX) or, with `extensible=(valid_bits, channel_mask)`, WAVE_FORMAT_EXTENSIBLE
    of subformat `tag`."""
    align = block_align if block_align is not None else channels * ((bits + 7) // 8)
    head = struct.pack("<HHIIHH", 0xFFFE if extensible else tag, channels, rate, rate * align, align, bits)
    if extensible:
        valid, mask = extensible
        guid = struct.pack("<I", tag) + bytes([0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71])
        return head + struct.pack("<HHI", 22, valid, mask) + guid
    return head if cb_size is None else head + struct.pack("<H", cb_size)


def wav_file(fmt: bytes, data: bytes, *, before: list[bytes] = (), after: list[bytes] = (),
             data_size: int | None = None, rf64: bool = False) -> bytes:
    """A RIFF/WAVE (or RF64) file: chunks `before`, fmt, data (its stated size `data_size` when given),
    `after`."""
    body = b"".join(before) + riff_chunk(b"fmt ", fmt) + riff_chunk(b"data", data, size=0xFFFFFFFF if rf64 else data_size)
    body += b"".join(after)
    if rf64:
        ds64 = riff_chunk(b"ds64", struct.pack("<QQQI", 4 + len(body) + 44, len(data) if data_size is None else data_size,
                                                0, 0))
        return b"RF64" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + ds64 + body
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body
