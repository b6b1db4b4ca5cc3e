"""Video-classification loading, side by side in one run: clips/s and CPU s per clip.

Load: 8 clips x 16 frames, stride 2, per video, resized to 128 shorter side + centre crop 112 ("eval"; the
"train" variant: RandomResizedCrop(112)), batches of 8 videos, 2 workers / threads, from 720p H.264 files
with 60-frame GOPs (made by ``--prepare``: libx264, testsrc2 + temporal noise, ``--seconds`` (default 40) at
30 fps, into data/video_bench, ignored by git; ``--content calibration``, the default, decodes at about 300
frames per second on one thread, ``--content noisy`` at a third of it). At 40 s
the 8 clips are ~170 frames apart and need ~484 decoded frames (key frame to clip end); at 10 s they need
every frame of the file. Each contender runs in a fresh process (``--one``). Contenders:

* spdl_torch: ``spdl_torch.DataLoader(VideoClipDataset(...))``, one ``decode_video_clips`` call per batch
  on a native pool of ``--threads`` threads;
* torch DataLoader + PyAV (``av``): seek to the key frame before each clip, decode forward, ``to_ndarray
  (rgb24)``, torchvision v2 resize + crop, ``--threads`` worker processes;
* torch DataLoader + torchcodec 0.17: ``VideoDecoder(num_ffmpeg_threads=1).get_frames_at`` + the same
  torchvision transform;
* spdl 0.8: ``spdl.io.demux_video`` + ``sample_decode_video`` (its FFmpeg filter graph scales and crops)
  in ``spdl.pipeline`` with ``--threads`` concurrent decodes.

Also the decode bound: libavcodec alone (the ffmpeg CLI's one-thread decode rate, no conversion) on the frames
the clips need, times the threads. ``python -m benchmarks.bench_video [--prepare] [--videos 16] [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil
import torch

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPDL_TORCH_VIDEO_BENCH_DIR", ROOT / "data" / "video_bench"))
CLIPS, T, STRIDE, SHORT, CROP, BATCH = 8, 16, 2, 128, 112, 8


# Input content: "calibration" (light temporal noise) decodes at ~300 frames/s with one thread on 2 vCPUs
# (2.5 Mbit/s); "noisy" (heavy temporal noise, ~23 Mbit/s) at about a third of it, so that
# decoding dominates every contender.
NOISE = {"calibration": 3, "noisy": 12}


def prepare(n_files: int = 4, seconds: int = 40, content: str = "calibration") -> list[Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n_files):
        p = DATA / f"h264_720p_gop60_{content}_{seconds}s_{i}.mp4"
        if not p.exists():
            src = (f"testsrc2=size=1280x720:rate=30:duration={seconds},hue=h={40 * i},"
                   f"noise=alls={NOISE[content]}:allf=t")
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, "-c:v", "libx264", "-preset",
                            "veryfast", "-g", "60", "-bf", "2", "-pix_fmt", "yuv420p", str(p)], check=True)
        out.append(p)
    return out


def clip_indices(num_frames: int) -> list[list[int]]:
    """decode_video_clips' uniform positions (the same frames for every contender)."""
    span = (T - 1) * STRIDE + 1
    room = num_frames - span
    return [[round(c * room / (CLIPS - 1)) + t * STRIDE for t in range(T)] for c in range(CLIPS)]


def _transform(train: bool):
    from torchvision.transforms import v2

    if train:
        return v2.RandomResizedCrop(CROP, antialias=True)
    return v2.Compose([v2.Resize(SHORT, antialias=True), v2.CenterCrop(CROP)])


# ---- torch DataLoader datasets (worker processes) ------------------------------------------------------
class _TorchcodecClips(torch.utils.data.Dataset):
    def __init__(self, paths, train):
        self.paths, self.train = paths, train

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder

        dec = VideoDecoder(str(self.paths[i]), num_ffmpeg_threads=1, seek_mode="exact")
        t = _transform(self.train)
        return torch.stack([t(dec.get_frames_at(indices=c).data) for c in clip_indices(dec.metadata.num_frames)])


class _PyAVClips(torch.utils.data.Dataset):
    def __init__(self, paths, train, convert=True):
        self.paths, self.train, self.convert = paths, train, convert

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import av

        t = _transform(self.train)
        with av.open(str(self.paths[i])) as c:
            st = c.streams.video[0]
            st.thread_type, st.codec_context.thread_count = "SLICE", 1
            fps, tb, n = st.average_rate, st.time_base, st.frames
            out = []
            for clip in clip_indices(n):
                want = {round(k / fps / tb): j for j, k in enumerate(clip)}
                c.seek(min(want), stream=st, backward=True)
                frames = [None] * len(clip)
                for frame in c.decode(st):
                    if frame.pts in want:
                        frames[want[frame.pts]] = (torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
                                                   if self.convert else 0)
                    if frame.pts >= max(want):
                        break
                if self.convert:
                    out.append(t(torch.stack(frames)))
            return torch.stack(out) if self.convert else torch.zeros(1)


def _one_thread(_):
    torch.set_num_threads(1)


def _torch_loader(ds, threads):
    return torch.utils.data.DataLoader(ds, batch_size=BATCH, num_workers=threads, persistent_workers=True,
                                       worker_init_fn=_one_thread, prefetch_factor=1)


def _spdl_torch_loader(paths, threads, train):
    import spdl_torch
    from spdl_torch.datasets import VideoClipDataset, collate

    spdl_torch.io.set_num_threads(threads)
    ds = VideoClipDataset(paths, num_frames_per_clip=T, num_indices_between_frames=STRIDE, num_clips=CLIPS, transform=_transform(train),
                          sampling="regular", seed=0)
    return spdl_torch.DataLoader(ds, batch_size=BATCH, num_workers=threads, collate_fn=collate)


def _spdl08_batches(paths, threads, train):
    import spdl.io
    from spdl.pipeline import PipelineBuilder

    crop = (f"crop={CROP}:{CROP}:(iw-{CROP})*random(0)*0:(ih-{CROP})/2" if False else f"crop={CROP}:{CROP}")
    scale = f"scale=w=-2:h={SHORT}:flags=bilinear"
    filt = f"{scale},{crop},format=pix_fmts=rgb24" if not train else \
        f"scale=w=-2:h={SHORT * 2}:flags=bilinear,crop={CROP * 2}:{CROP * 2},scale={CROP}:{CROP},format=pix_fmts=rgb24"

    def load(path):
        packets = spdl.io.demux_video(str(path))
        clips = clip_indices(packets.num_frames if hasattr(packets, "num_frames") else len(packets))
        flat = sorted({i for c in clips for i in c})
        frames = spdl.io.sample_decode_video(packets, flat, filter_desc=filt)
        arr = spdl.io.to_torch(spdl.io.convert_frames(frames))  # [F, H, W, C]
        pos = {k: j for j, k in enumerate(flat)}
        return torch.stack([arr[[pos[i] for i in c]] for c in clips]).permute(0, 1, 4, 2, 3)

    pipe = (PipelineBuilder().add_source(paths).pipe(load, concurrency=threads).aggregate(BATCH)
            .pipe(torch.stack).add_sink(4).build(num_threads=threads))
    return pipe


def _cpu(proc: psutil.Process) -> float:
    total = sum(proc.cpu_times()[:2])
    for ch in proc.children(recursive=True):
        try:
            total += sum(ch.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def run_one(name: str, paths: list[Path], threads: int, train: bool) -> dict:
    proc = psutil.Process()
    gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
    cpu0, t0 = _cpu(proc), time.perf_counter()
    first, clips, cpu_end = None, 0, None
    if name == "spdl 0.8":
        pipe = _spdl08_batches(paths, threads, train)
        with pipe.auto_stop():
            for batch in pipe.get_iterator(timeout=600):
                first = first or time.perf_counter() - t0
                clips += batch.shape[0] * batch.shape[1]
        cpu_end = _cpu(proc)
    else:
        if name == "spdl_torch":
            loader = _spdl_torch_loader(paths, threads, train)
        elif name == "torchcodec":
            loader = _torch_loader(_TorchcodecClips(paths, train), threads)
        else:
            loader = _torch_loader(_PyAVClips(paths, train), threads)
        it = iter(loader)
        for batch in it:
            x = batch[0] if isinstance(batch, (list, tuple)) else batch
            first = first or time.perf_counter() - t0
            clips += x.shape[0] * x.shape[1]
        cpu_end = _cpu(proc)
        del it, loader
    wall = time.perf_counter() - t0
    return {"contender": name, "train": train, "clips": clips, "wall_s": wall, "clips_per_s": clips / wall,
            "cpu_s_per_clip": (cpu_end - cpu0) / clips, "first_batch_s": first}


def _needed_frames(num_frames: int, gop: int = 60) -> int:
    """Frames a decoder must decode for the clips: from the key frame before each clip's first frame to its
    last, once (a clip starting inside the stretch already decoded continues it)."""
    done, total = -1, 0
    for clip in sorted(clip_indices(num_frames)):
        key = (clip[0] // gop) * gop
        start = done + 1 if key <= done + 1 else key  # continue forward, or seek to the key frame
        total += max(0, clip[-1] - max(start, done + 1) + 1)
        done = max(done, clip[-1])
    return total


def decode_bound(paths: list[Path], threads: int) -> dict:
    """libavcodec alone: the ffmpeg CLI's one-thread decode rate (every frame, no conversion: -f null), applied
    to the frames the clips need (the key frame before each clip to its last frame), times the threads."""
    rates, needed = [], []
    for p in paths[:2]:
        n = int(subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                "stream=nb_read_packets", "-of", "csv=p=0", str(p)], capture_output=True, text=True,
                               check=True).stdout.strip())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["ffmpeg", "-v", "error", "-threads", "1", "-i", str(p), "-f", "null", "-"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rates.append(n / cpu)
        needed.append(_needed_frames(n))
    fps = sum(rates) / len(rates)
    per_video = (sum(needed) / len(needed)) / fps
    return {"decode_frames_per_cpu_s": fps, "needed_frames_per_video": sum(needed) / len(needed),
            "decode_s_per_video_1_thread": per_video, "bound_clips_per_s": threads * CLIPS / per_video}


def check_exact(paths: list[Path]) -> dict:
    """Our eval clips against torchcodec's frames (the CLI's frames; test_video.py) + torchvision."""
    from torchcodec.decoders import VideoDecoder

    from spdl_torch.io import decode_video_clips

    ours = decode_video_clips([paths[0]], num_frames_per_clip=T, num_indices_between_frames=STRIDE, num_clips=CLIPS, height=CROP, width=CROP,
                              resize_shorter=SHORT).data[0]
    dec = VideoDecoder(str(paths[0]), seek_mode="exact")
    t = _transform(False)
    ref = torch.stack([t(dec.get_frames_at(indices=c).data) for c in clip_indices(dec.metadata.num_frames)])
    d = (ours.int() - ref.int()).abs()
    return {"max_abs_diff": int(d.max()), "mean_abs_diff": float(d.float().mean())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", action="store_true", help="only make the input files")
    ap.add_argument("--videos", type=int, default=16)
    ap.add_argument("--files", type=int, default=4, help="distinct input files (the videos cycle over them)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--contenders", default="spdl_torch,torchcodec,pyav,spdl 0.8")
    ap.add_argument("--variants", default="eval,train")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--content", choices=sorted(NOISE), default="calibration",
                    help="input content (see NOISE): calibration-like decode cost, or decode-dominated")
    ap.add_argument("--seconds", type=int, default=40, help="length of each input file")
    ap.add_argument("--one", nargs=2, metavar=("CONTENDER", "VARIANT"), help="one pass in this process (JSON line)")
    args = ap.parse_args()
    files = prepare(args.files, seconds=args.seconds, content=args.content)
    if args.prepare:
        return
    paths = [files[i % len(files)] for i in range(args.videos)]
    if args.one:
        print(json.dumps(run_one(args.one[0], paths, args.threads, args.one[1] == "train")), flush=True)
        return
    results = {"decode_bound": decode_bound(files, args.threads), "exact": check_exact(files), "runs": []}
    print(json.dumps(results["decode_bound"]), json.dumps(results["exact"]), flush=True)
    common = ["--videos", str(args.videos), "--files", str(args.files), "--threads", str(args.threads), "--content",
              args.content, "--seconds", str(args.seconds)]
    for _ in range(args.repeats):
        for variant in args.variants.split(","):
            for name in args.contenders.split(","):
                p = subprocess.run([sys.executable, "-m", "benchmarks.bench_video", *common, "--one", name, variant],
                                   capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                try:
                    r = json.loads(p.stdout.strip().splitlines()[-1])
                except (IndexError, ValueError):  # a peer that fails is reported, not fatal
                    r = {"contender": name, "train": variant == "train", "error": p.stderr[-300:]}
                results["runs"].append(r)
                print(json.dumps(r), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
