"""Audio windows and loading, side by side with soundfile (libsndfile, seeking) + soxr.

    python -m benchmarks.bench_audio [--reps 5] [--only windows|loader] [--files 256] [--dir DIR]

windows: the cost of one 2 s window at 0 s and at 540 s of a 10-minute 48 kHz stereo file (made once by the
  ffmpeg CLI from lavfi sine + pink noise, in WAV, FLAC, MP3, Ogg Vorbis, Ogg Opus and AAC in M4A), one thread:
  ``spdl_torch.io.decode_audio(p, start_seconds=s, stop_seconds=s + 2)`` (default seek_mode, the packet index
  cached after the first call) and ``soundfile.read(p, start=, frames=, dtype="float32")`` where libsndfile
  reads the format; best of 3 calls each, wall and CPU time, and the CPU time of our first call (for MP3 and
  Ogg it builds the packet index).
loader: seeded random 2 s crops, 16 kHz mono, batch 32, 2 workers, over a sample of the media corpus that keeps
  its long Opus music tracks: ``AudioDataset`` + ``spdl_torch.DataLoader`` (threads) against torch's DataLoader
  (worker processes) + soundfile (reading only the crop's frames) + soxr (its default quality) and a channel
  mean. Files/s over the whole pass (workers' start included); CPU per file: user + system time of the process
  and its joined workers.

Every repetition of every measurement runs in a fresh process, the contenders interleaved (A B, then B A);
ratios are per repetition, reported as their median and range.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RATE, SECONDS, BATCH, WORKERS = 16000, 2.0, 32, 2
N = int(RATE * SECONDS)
LATE = 540.0
LONG = {  # the 10-minute files: suffix, the CLI's encoder arguments
    "WAV": (".wav", ["-c:a", "pcm_s16le"]),
    "FLAC": (".flac", ["-c:a", "flac"]),
    "MP3": (".mp3", ["-c:a", "libmp3lame", "-q:a", "2"]),
    "Ogg Vorbis": (".ogg", ["-c:a", "libvorbis"]),
    "Opus": (".opus", ["-c:a", "libopus"]),
    "AAC (m4a)": (".m4a", ["-c:a", "aac"]),
}
SOUNDFILE_READS = {"WAV", "FLAC", "MP3", "Ogg Vorbis", "Opus"}  # libsndfile 1.2


def _long_files(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    src = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=600", "-f", "lavfi", "-i",
           "anoisesrc=color=pink:sample_rate=48000:duration=600:amplitude=0.3:seed=1", "-filter_complex",
           "[0:a][1:a]amix=inputs=2,aformat=channel_layouts=stereo", "-ac", "2"]
    out = {}
    for name, (suffix, args) in LONG.items():
        path = root / f"long{suffix}"
        if not path.exists():
            tmp = path.with_suffix(".tmp" + suffix)
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *src, *args, str(tmp)], check=True)
            tmp.rename(path)
        out[name] = path
    return out


# ---- windows: one fresh process per repetition ----------------------------------------------------------------

def _best(fn, n=3):
    """(best wall ms, best CPU ms, the first call's CPU ms) over n calls."""
    wall = cpu = float("inf")
    first = None
    for _ in range(n):
        c, t = time.thread_time(), time.perf_counter()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.thread_time() - c)
        first = cpu if first is None else first
    return wall * 1e3, cpu * 1e3, first * 1e3


def _child_windows(root: Path, rep: int) -> None:
    import soundfile as sf
    import torch

    import spdl_torch
    from spdl_torch.io import decode_audio

    spdl_torch.io.set_num_threads(1)
    torch.set_num_threads(1)
    cases = [(name, who, s) for name in LONG for who in ("spdl_torch", "soundfile") for s in (0.0, LATE)
             if who == "spdl_torch" or name in SOUNDFILE_READS]
    random.Random(rep).shuffle(cases)
    files = _long_files(root)
    rows = []
    for name, who, s in cases:
        p = str(files[name])
        if who == "spdl_torch":
            fn = lambda: decode_audio(p, start_seconds=s, stop_seconds=s + 2.0)  # noqa: E731
        else:
            fn = lambda: sf.read(p, start=int(s * 48000), frames=96000, dtype="float32")  # noqa: E731
        wall, cpu, first = _best(fn)
        rows.append({"codec": name, "who": who, "start": s, "wall_ms": wall, "cpu_ms": cpu, "first_cpu_ms": first})
    print(json.dumps(rows))


# ---- loader: one fresh process per contender and repetition -------------------------------------------------------

def _pad(x):
    import torch

    x = x[..., :N]
    out = torch.zeros((1, N), dtype=torch.float32)
    out[:, : x.shape[-1]] = x
    return out


class _SoundfileSet:
    """torch Dataset: soundfile reads the crop's frames only (it seeks), soxr resamples, channels averaged."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import numpy as np
        import soundfile as sf
        import soxr
        import torch

        info = sf.info(self.paths[i])
        want = int(SECONDS * info.samplerate)
        start = random.Random(i).randrange(max(info.frames - want, 0) + 1)
        x, sr = sf.read(self.paths[i], start=start, frames=want, dtype="float32", always_2d=True)
        mono = x.mean(axis=1)
        y = soxr.resample(mono, sr, RATE) if sr != RATE else mono
        return _pad(torch.from_numpy(np.ascontiguousarray(y, dtype=np.float32))[None])


def _loader(who: str, paths):
    import torch

    if who == "spdl_torch":
        import spdl_torch
        from spdl_torch.datasets import AudioDataset

        spdl_torch.io.set_num_threads(WORKERS)
        ds = AudioDataset(paths, sample_rate=RATE, num_channels=1, duration=SECONDS, random_crop=True, seed=0)
        return spdl_torch.DataLoader(ds, batch_size=BATCH, num_workers=WORKERS)
    return torch.utils.data.DataLoader(_SoundfileSet(paths), batch_size=BATCH, num_workers=WORKERS)


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _child_loader(who: str, paths: list[str]) -> None:
    loader = _loader(who, paths)
    gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
    t0, c0 = time.perf_counter(), _cpu()
    files = 0
    for batch in loader:
        x = batch[0] if isinstance(batch, (list, tuple)) else batch
        x = getattr(x, "data", x)  # AudioDataset's batches: [Waveform(data, lengths), labels]
        assert x.shape[-1] == N and x.shape[-2] == 1, x.shape
        files += x.shape[0]
    del loader
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    assert files == len(paths)
    print(json.dumps({"files_per_s": files / wall, "cpu_ms_per_file": cpu / files * 1e3}))


def _corpus(n: int) -> list[str]:
    """A proportional sample of the corpus' WAV, FLAC, MP3, Ogg and Opus files (at least 4 of each suffix, every
    Opus track of 6 minutes or more), only files the ffmpeg CLI decodes."""
    from spdl_torch import DecodeError
    from spdl_torch.io import audio_metadata
    from tests._utils import corpus

    by = {}
    for p in corpus.files("audio"):
        if p.suffix.lower() not in (".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus"):
            continue
        try:
            m = audio_metadata(p)
        except DecodeError:
            continue
        if m.codec in ("pcm_s16le", "flac", "mp3", "vorbis", "opus"):
            by.setdefault(p.suffix.lower(), []).append((str(p), m.duration_seconds or 0.0))
    total = sum(len(v) for v in by.values())
    rng = random.Random(0)
    out = []
    for suffix, group in sorted(by.items()):
        k = min(len(group), max(4, round(n * len(group) / total)))
        keep = [g for g in group if suffix == ".opus" and g[1] >= 360]
        out += keep + rng.sample([g for g in group if g not in keep], max(0, k - len(keep)))
    return sorted(p for p, _ in out)[:n] if len(out) > n else sorted(p for p, _ in out)


def _composition(paths: list[str]) -> str:
    import soundfile as sf

    rows = {}
    for p in paths:
        info = sf.info(p)
        r = rows.setdefault(Path(p).suffix.lower(), [0, 0.0, 0.0])
        r[0] += 1
        r[1] += info.duration
        r[2] = max(r[2], info.duration)
    return "; ".join(f"{s}: {c} files, {d / 60:.1f} min (longest {m / 60:.1f} min)" for s, (c, d, m) in rows.items())


# ---- the parent ---------------------------------------------------------------------------------------------

def _run(args: list[str]):
    run = subprocess.run([sys.executable, "-m", "benchmarks.bench_audio", *args], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONHASHSEED="0"))
    if run.returncode != 0:
        sys.exit(f"bench_audio {' '.join(args)} failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def _spread(values) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def windows(root: Path, reps: int) -> None:
    _long_files(root)
    reports = [_run(["--child", "windows", "--dir", str(root), "--rep", str(r)]) for r in range(reps)]
    print(f"\n== windows: a 2 s window of a 10-minute 48 kHz stereo file, one thread, best of 3 calls; "
          f"{reps} fresh processes, median [range]; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print("wall ms; 'first 540 s': our first call's CPU ms in the process (the packet index built, for MP3 / Ogg)")
    print(f"{'codec':<12}{'ours 0 s':>11}{'ours 540 s':>12}{'sf 0 s':>9}{'sf 540 s':>10}{'first 540 s':>13}   "
          f"{'ours 540/0 (CPU)':<22}{'ours/sf at 540 (CPU)':<22}")
    for name in LONG:
        def pick(who, s, key, report):
            return next(r[key] for r in report if r["codec"] == name and r["who"] == who and r["start"] == s)

        cells = []
        for who, s in (("spdl_torch", 0.0), ("spdl_torch", LATE), ("soundfile", 0.0), ("soundfile", LATE)):
            if who == "soundfile" and name not in SOUNDFILE_READS:
                cells.append("-")
                continue
            cells.append(f"{statistics.median(pick(who, s, 'wall_ms', r) for r in reports):.2f}")
        late = [pick("spdl_torch", LATE, "cpu_ms", r) / pick("spdl_torch", 0.0, "cpu_ms", r) for r in reports]
        vs_sf = ([pick("spdl_torch", LATE, "cpu_ms", r) / pick("soundfile", LATE, "cpu_ms", r) for r in reports]
                 if name in SOUNDFILE_READS else None)
        first = f"{statistics.median(pick('spdl_torch', LATE, 'first_cpu_ms', r) for r in reports):.1f}"
        print(f"{name:<12}{cells[0]:>11}{cells[1]:>12}{cells[2]:>9}{cells[3]:>10}{first:>13}   {_spread(late):<22}"
              f"{_spread(vs_sf) if vs_sf else '-':<22}")


def loader(files: int, reps: int) -> None:
    paths = _corpus(files)
    if not paths:
        print("loader: no media corpus")
        return
    listing = Path(os.environ.get("TMPDIR", "/tmp")) / "spdl_torch_bench_audio_files.json"
    listing.write_text(json.dumps(paths))
    results = {"spdl_torch": [], "soundfile+soxr": []}
    for r in range(reps):
        order = list(results) if r % 2 == 0 else list(results)[::-1]
        for who in order:
            results[who].append(_run(["--child", "loader", "--who", who, "--list", str(listing)]))
    print(f"\n== loader: {len(paths)} corpus files ({_composition(paths)}); random {SECONDS:g} s crops, 16 kHz mono, "
          f"batch {BATCH}, {WORKERS} workers; {reps} fresh processes each, interleaved; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    for who, rows in results.items():
        print(f"{who:<16}{statistics.median(x['files_per_s'] for x in rows):>9.1f} files/s"
              f"{statistics.median(x['cpu_ms_per_file'] for x in rows):>9.2f} CPU ms/file")
    fps = [a["files_per_s"] / b["files_per_s"] for a, b in zip(results["spdl_torch"], results["soundfile+soxr"])]
    cpu = [a["cpu_ms_per_file"] / b["cpu_ms_per_file"] for a, b in zip(results["spdl_torch"], results["soundfile+soxr"])]
    print(f"spdl_torch vs soundfile + soxr: {_spread(fps)} files/s, {_spread(cpu)} CPU per file")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--files", type=int, default=256)
    ap.add_argument("--only", choices=("windows", "loader"))
    ap.add_argument("--dir", type=Path, default=Path("build/bench_audio"), help="where the 10-minute files are made")
    ap.add_argument("--child", choices=("windows", "loader"), help=argparse.SUPPRESS)
    ap.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--who", help=argparse.SUPPRESS)
    ap.add_argument("--list", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "windows":
        return _child_windows(args.dir, args.rep)
    if args.child == "loader":
        return _child_loader(args.who, json.loads(args.list.read_text()))
    for mod in ("soundfile", "soxr"):
        try:
            __import__(mod)
        except ImportError as e:
            sys.exit(f"bench_audio needs {mod} (make bench installs the benchmark packages): {e}")
    if args.only in (None, "windows"):
        windows(args.dir, args.reps)
    if args.only in (None, "loader"):
        loader(args.files, args.reps)


if __name__ == "__main__":
    main()
