"""Audio loading side by side: decode + resample to 16 kHz mono + a random 4 s crop, batch 32, 2 workers
(threads for spdl_torch, processes for torch's DataLoader), over real files from the media corpus.

    python -m benchmarks.bench_audio [--files 256] [--reps 3] [--only wav_flac|mix]

Contenders (benchmark-only packages; each is skipped with the reason when missing):
  spdl_torch   spdl_torch.DataLoader(AudioDataset(..., duration=4, random_crop=True)), one native call per batch
  soundfile    torch DataLoader + soundfile (reads only the crop's frames) + soxr.resample (torchaudio has no
               release for torch 2.14.1); mono by channel mean
  torchcodec   torch DataLoader + torchcodec AudioDecoder(sample_rate=16000, num_channels=1).get_samples_played_in_range
  spdl         torch DataLoader + spdl.io.load_audio(timestamp=..., filter_desc=16 kHz mono)
Files/s is wall time over the whole run (workers' start included); CPU s per file is user + system time of
the process and its (joined) worker processes, divided by the files. Repetitions are interleaved A B C D A B C D.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import time

import torch

from tests._utils import corpus

RATE, SECONDS, BATCH, WORKERS = 16000, 4.0, 32, 2
N = int(RATE * SECONDS)


def _pad(x: torch.Tensor) -> torch.Tensor:
    x = x[..., :N]
    out = torch.zeros((1, N), dtype=torch.float32)
    out[:, : x.shape[-1]] = x
    return out


class _SoundfileSet(torch.utils.data.Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import numpy as np
        import soundfile as sf
        import soxr

        info = sf.info(self.paths[i])
        want = int(SECONDS * info.samplerate)
        start = random.Random(i).randrange(max(info.frames - want, 0) + 1)
        x, sr = sf.read(self.paths[i], start=start, frames=want, dtype="float32", always_2d=True)
        mono = x.mean(axis=1)
        y = soxr.resample(mono, sr, RATE) if sr != RATE else mono
        return _pad(torch.from_numpy(np.ascontiguousarray(y, dtype=np.float32))[None])


class _TorchcodecSet(_SoundfileSet):
    def __getitem__(self, i):
        from torchcodec.decoders import AudioDecoder

        dec = AudioDecoder(self.paths[i], sample_rate=RATE, num_channels=1)
        dur = dec.metadata.duration_seconds or 0.0
        start = random.Random(i).uniform(0.0, max(dur - SECONDS, 0.0))
        return _pad(dec.get_samples_played_in_range(start, start + SECONDS).data)


class _SpdlSet(_SoundfileSet):
    def __getitem__(self, i):
        import spdl.io

        from spdl_torch.io import audio_metadata

        dur = audio_metadata(self.paths[i]).duration_seconds or 0.0  # spdl 0.8 has no separate probe call
        start = random.Random(i).uniform(0.0, max(dur - SECONDS, 0.0))
        ts = (start, start + SECONDS)
        try:  # spdl 0.8 cannot seek some files (even to 0): then decode from the start, trimmed by the filter
            buf = spdl.io.load_audio(self.paths[i], ts, filter_desc=spdl.io.get_audio_filter_desc(
                sample_rate=RATE, num_channels=1, timestamp=ts))
        except RuntimeError:
            buf = spdl.io.load_audio(self.paths[i], filter_desc=spdl.io.get_audio_filter_desc(
                sample_rate=RATE, num_channels=1, num_frames=N))
        x = spdl.io.to_torch(buf)  # [C, N] planar fltp
        return _pad(x.reshape(1, -1) if x.dim() == 1 else x[:1] if x.shape[0] == 1 else x.reshape(1, -1))


def _torch_loader(ds):
    return torch.utils.data.DataLoader(ds, batch_size=BATCH, num_workers=WORKERS, shuffle=False)


def _spdl_torch_loader(paths):
    import spdl_torch
    from spdl_torch.datasets import AudioDataset

    spdl_torch.io.set_num_threads(WORKERS)
    ds = AudioDataset(paths, sample_rate=RATE, num_channels=1, duration=SECONDS, random_crop=True, seed=0)
    return spdl_torch.DataLoader(ds, batch_size=BATCH, num_workers=WORKERS)


CONTENDERS = {
    "spdl_torch": _spdl_torch_loader,
    "soundfile+soxr": lambda p: _torch_loader(_SoundfileSet(p)),
    "torchcodec": lambda p: _torch_loader(_TorchcodecSet(p)),
    "spdl": lambda p: _torch_loader(_SpdlSet(p)),
}
REQUIRES = {"soundfile+soxr": ("soundfile", "soxr"), "torchcodec": ("torchcodec",), "spdl": ("spdl.io",)}


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_once(name: str, paths) -> tuple[float, float]:
    loader = CONTENDERS[name](paths)
    t0, c0 = time.perf_counter(), _cpu()
    files = 0
    for batch in loader:
        x = batch[0] if isinstance(batch, (list, tuple)) else batch
        assert x.shape[-1] == N and x.shape[-2] == 1, x.shape
        files += x.shape[0]
    del loader
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    assert files == len(paths)
    return files / wall, cpu / files


def _sets(n: int) -> dict[str, list[str]]:
    from spdl_torch import DecodeError
    from spdl_torch.io import decode_audio

    allp = []
    for p in corpus.files("audio"):
        if p.suffix.lower() not in (".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus"):
            continue
        try:  # files no FFmpeg decoder here reads (the CLI refuses them too) are left out, and counted
            decode_audio(p, stop_seconds=0.01)
            allp.append(p)
        except DecodeError as e:
            print(f"left out {corpus.short_name(p)}: {e.reason}")
    by = {}
    for p in allp:
        by.setdefault(p.suffix.lower(), []).append(str(p))
    rng = random.Random(0)
    mix = []
    for group in by.values():  # proportional, at least a few of each suffix
        k = max(4, round(n * len(group) / len(allp)))
        mix += rng.sample(group, min(k, len(group)))
    wf = [p for p in allp if p.suffix.lower() in (".wav", ".flac")]
    return {"mix": sorted(mix)[:n] if len(mix) > n else sorted(mix), "wav_flac": sorted(rng.sample([str(p) for p in wf], min(n, len(wf))))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", choices=("mix", "wav_flac"))
    args = ap.parse_args()
    available = []
    for name in CONTENDERS:
        try:
            for mod in REQUIRES.get(name, ()):
                __import__(mod)
            available.append(name)
        except ImportError as e:
            print(f"skip {name}: {e}")
    for set_name, paths in _sets(args.files).items():
        if args.only and set_name != args.only:
            continue
        results = {n: [] for n in available}
        for name in available:  # warm-up (page cache, imports)
            run_once(name, paths[:BATCH])
        for _ in range(args.reps):
            for name in available:
                results[name].append(run_once(name, paths))
        print(f"\n== {set_name}: {len(paths)} files, 16 kHz mono, random {SECONDS:g} s crops, batch {BATCH}, "
              f"{WORKERS} workers, {os.cpu_count()} CPUs, median of {args.reps}")
        med = {n: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for n, v in results.items()}
        peers = [n for n in med if n != "spdl_torch"]
        best = max(peers, key=lambda n: med[n][0]) if peers else None
        print(f"{'contender':<16}{'files/s':>10}{'CPU ms/file':>14}{'x files/s':>12}{'x CPU':>9}")
        for n, (fps, cpu) in med.items():
            ratio = "" if best is None else f"{med['spdl_torch'][0] / fps:>12.2f}{med['spdl_torch'][1] / cpu:>9.2f}"
            print(f"{n:<16}{fps:>10.1f}{cpu * 1000:>14.2f}{ratio}")
        if best:
            print(f"spdl_torch vs the best peer ({best}): {med['spdl_torch'][0] / med[best][0]:.2f}x files/s, "
                  f"{med['spdl_torch'][1] / med[best][1]:.2f}x CPU per file")


if __name__ == "__main__":
    main()
