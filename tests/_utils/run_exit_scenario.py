"""Scripts that end with work in flight, run by tests/reliability/test_exit.py:
``python run_exit_scenario.py SCENARIO RUNS DIR``.

The parent imports everything and builds the inputs under DIR once, then forks RUNS children at once. Each child
(stdout and stderr to its own files under DIR) runs the scenario, leaves its loaders / pipelines with work still
in flight and ends as a script does: ``sys.exit(0)``, through the interpreter's normal exit (atexit handlers,
finalization, static destructors). The parent prints one JSON line: every child's exit code, stdout and stderr.
"""

import io
import json
import os
import sys
import threading

import torch
import torch.utils.data as tud
from PIL import Image

import spdl_torch
from spdl_torch.datasets import ImageFolder, TarShardDataset
from spdl_torch.datasets import write_shards
from spdl_torch.pipeline import PipelineBuilder


def _members(n: int) -> list:
    return [(f"s{i:05d}", {"bin": bytes([i % 251]) * (16 + i % 40), "cls": str(i % 7).encode()}) for i in range(n)]


def _heavy(x: torch.Tensor, rounds: int = 8) -> torch.Tensor:  # native torch work, the GIL released
    for _ in range(rounds):
        x = torch.tanh(x @ x)
    return x


class Heavy(tud.Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        return _heavy(torch.full((160, 160), 1e-3 * i))[0, :4]


def _break_after(loader, n: int) -> None:
    for i, _ in enumerate(loader):
        if i + 1 == n:
            break


def prepare(name: str, root: str) -> dict:
    if name in ("tar_iterators_left", "tar_300"):
        write_shards(_members(300), os.path.join(root, "tar"), shard_size=10240)
        return {"index": os.path.join(root, "tar", "index.json")}
    if name == "tar_gzip":  # no member table: blocks read on the shard read-ahead thread
        paths = write_shards(_members(200), os.path.join(root, "gz"), shard_size=10240, gzip=True)
        return {"paths": paths}
    if name == "decode_in_flight":  # the native decode pool busy at exit
        for k in range(48):
            d = os.path.join(root, "img", f"c{k % 2}")
            os.makedirs(d, exist_ok=True)
            Image.effect_noise((640, 480), 40 + k).convert("RGB").save(os.path.join(d, f"{k}.jpg"), quality=90)
        return {"root": os.path.join(root, "img")}
    return {}


def run(name: str, data: dict) -> None:
    if name == "tar_iterators_left":
        # iterate the dataset directly (whole epochs, then a few samples of several iterators left open), then
        # three loaders left after 2 batches each
        ds = TarShardDataset(data["index"], batch_size=8)
        for _ in range(2):
            assert sum(1 for _ in ds) == 300
        its = [iter(ds) for _ in range(3)]
        for it in its:
            for _ in range(3):
                next(it)
        for _ in range(3):
            loader = spdl_torch.DataLoader(TarShardDataset(data["index"], batch_size=8), batch_size=8,
                                           num_workers=2, collate_fn=lambda b: b)
            _break_after(loader, 2)
    elif name == "tar_300":
        loader = spdl_torch.DataLoader(TarShardDataset(data["index"], batch_size=8), batch_size=8, num_workers=2,
                                       collate_fn=lambda b: b)
        _break_after(loader, 2)
    elif name == "tar_gzip":
        ds = TarShardDataset(data["paths"], batch_size=8, shuffle_buffer=20)
        it = iter(ds)
        next(it)  # left suspended with its next block being read ahead
        loader = spdl_torch.DataLoader(ds, batch_size=8, num_workers=2, collate_fn=lambda b: b)
        kept = iter(loader)  # one iterator kept alive (the script's variable), one dropped
        next(kept)
        _break_after(spdl_torch.DataLoader(ds, batch_size=8, num_workers=2, collate_fn=lambda b: b), 1)
    elif name == "heavy_map":  # worker threads inside long native torch work
        loader = spdl_torch.DataLoader(Heavy(), batch_size=8, num_workers=2)
        _break_after(loader, 1)
    elif name == "decode_in_flight":
        from torchvision.transforms import v2

        tf = v2.Compose([v2.RandomResizedCrop(224), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
        loader = spdl_torch.DataLoader(ImageFolder(data["root"], transform=tf), batch_size=16, num_workers=2)
        _break_after(loader, 1)
    elif name == "pipeline":  # the engine alone: runs left mid-stream, one started and never iterated
        def build(**kw):  # calls of tens of ms of native torch work: in progress when the script ends
            return (PipelineBuilder().add_source(range(1000))
                    .pipe(lambda i: _heavy(torch.full((300, 300), 1e-3 * i), 10), concurrency=2)
                    .add_sink(2).build(**kw))
        p1 = build(num_threads=3)
        next(iter(p1))
        p2 = build(num_threads=2)
        p2.start()
        p3 = build(num_threads=3, persistent_threads=True)
        for _ in p3:
            break
        it = iter(build(num_threads=2))
        next(it)
        # a user's non-daemon thread still iterating when the main thread returns: it ends its loop first
        user = threading.Thread(target=lambda: [x for _, x in zip(range(5), iter(build(num_threads=2)))])
        user.start()
    else:
        raise ValueError(name)
    print("done", flush=True)


def main() -> None:
    name, runs, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.set_num_threads(1)
    data = prepare(name, root)
    pids = []
    for k in range(runs):
        pid = os.fork()
        if pid == 0:
            for fd, suffix in ((1, "out"), (2, "err")):
                f = os.open(os.path.join(root, f"child{k}.{suffix}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(f, fd)
                os.close(f)
            sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), line_buffering=True)
                                      for fd in (1, 2))
            run(name, data)
            sys.exit(0)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]

    def read(k: int, suffix: str) -> str:
        with open(os.path.join(root, f"child{k}.{suffix}")) as f:
            return f.read()

    print(json.dumps({"codes": codes, "stdout": [read(k, "out") for k in range(runs)],
                      "stderr": [read(k, "err") for k in range(runs)]}))


if __name__ == "__main__":
    main()
