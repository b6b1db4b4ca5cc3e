"""One rank of the framework tests (tests/dataloader/test_loader_frameworks.py), started twice by
``torchrun --nproc-per-node 2``.

    torchrun --standalone --nproc-per-node 2 run_framework_rank.py {lightning|accelerate} {torch|spdl|spdl-process} OUT_DIR

Trains (Lightning: ``Trainer(strategy="ddp", accelerator="cpu", devices=2)``, gloo) or iterates (Accelerate:
``Accelerator(cpu=True).prepare(loader)``) one epoch over a 16-sample dataset with ``num_workers=2`` and writes
``OUT_DIR/rank<r>.json``: the sample indices this rank saw, the names of the threads that loaded them, the ids of
the processes that loaded them, and the class of the loader the framework iterated. ``spdl-process``: ours with
``worker_mode="process"`` (torch's worker processes). ``spdl-folder``: ours over ``torchvision.datasets.ImageFolder``
of ``OUT_DIR/folder`` (16 solid PNGs, file ``i`` of value ``10 i``: the loader converts it, so it loads natively),
its ``target_transform`` naming the thread that loaded the sample.
"""

import json
import os
import sys
import threading

import torch
import torch.utils.data as tud

N = 16


class Indexed(tud.Dataset):
    """Sample ``i`` is ``(tensor([i.]), i, name of the thread that loaded it)``."""

    def __len__(self):
        return N

    def __getitem__(self, i):
        return torch.tensor([float(i)]), i, f"{threading.current_thread().name}@{os.getpid()}"

    def spdl_native_loading(self):
        """Stands for a native spdl_torch dataset: worker_mode="auto" loads it on threads, also in the loader a
        framework re-creates."""
        return True


def _named(target):
    return target, f"{threading.current_thread().name}@{os.getpid()}"


def make_loader(which, out_dir=None):
    import spdl_torch

    if which == "spdl-folder":
        import torchvision
        from torchvision.transforms import v2

        folder = torchvision.datasets.ImageFolder(os.path.join(out_dir, "folder"), target_transform=_named,
                                                  transform=v2.Compose([v2.Resize((8, 8)), v2.PILToTensor()]))
        return spdl_torch.DataLoader(folder, batch_size=2, num_workers=2)
    if which == "torch":
        return tud.DataLoader(Indexed(), batch_size=2, num_workers=2)
    kw = {"worker_mode": "process"} if which == "spdl-process" else {}
    return spdl_torch.DataLoader(Indexed(), batch_size=2, num_workers=2, **kw)


def unpack(batch):
    """``(x, indices, thread names)`` of a batch of ``Indexed`` or of the folder (its images' value names the file)."""
    if len(batch) == 3:
        return batch
    images, (_, names) = batch
    idx = (images[:, 0, 0, 0].float() / 10).round().long()
    return idx.float().unsqueeze(1), idx, names


def _is_spdl(loader):
    """An spdl_torch.DataLoader, also inside Accelerate's wrapper (whose ``__class__`` is its inner loader's)."""
    import spdl_torch

    return isinstance(loader, spdl_torch.DataLoader)


def write(out_dir, rank, seen, threads, loader):
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "seen": seen, "threads": sorted({t.split("@")[0] for t in threads}),
                   "pids": sorted({int(t.split("@")[1]) for t in threads}), "pid": os.getpid(),
                   "mode": getattr(getattr(loader, "base_dataloader", loader), "resolved_worker_mode", None),
                   "loader": f"{type(loader).__module__}.{type(loader).__qualname__}",
                   "is_spdl": _is_spdl(loader),
                   "sampler": type(getattr(loader, "sampler", None)).__name__}, f)


def run_lightning(which, out_dir):
    import pytorch_lightning as pl

    class Recorder(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.seen, self.threads = [], set()

        def train_dataloader(self):  # built inside the hook, as users do: Lightning re-creates it with a sampler
            return make_loader(which, out_dir)

        def training_step(self, batch, batch_idx):
            x, idx, names = unpack(batch)
            self.seen += [int(i) for i in idx]
            self.threads.update(names)
            return self.layer(x).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    model = Recorder()
    trainer = pl.Trainer(strategy="ddp", accelerator="cpu", devices=2, max_epochs=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         num_sanity_val_steps=0)
    trainer.fit(model)
    write(out_dir, trainer.global_rank, model.seen, model.threads, trainer.train_dataloader)


def run_accelerate(which, out_dir):
    from accelerate import Accelerator

    acc = Accelerator(cpu=True)
    loader = make_loader(which, out_dir)
    prepared = acc.prepare(loader)
    if which != "torch":  # prepare() rebuilt it over torch's DataLoader: put ours back inside
        import spdl_torch

        prepared = spdl_torch.distributed.keep_threads(prepared, like=loader)
    seen, threads = [], set()
    for batch in prepared:
        x, idx, names = unpack(batch)
        seen += [int(i) for i in idx]
        threads.update(names)
    write(out_dir, acc.process_index, seen, threads, prepared)
    acc.wait_for_everyone()


def end_process_group():
    """Ends the process group before the interpreter finalizes, as torch asks of every program.

    Lightning's ``Trainer.fit`` leaves it alive. Then a gloo worker thread may still be destroying its last
    all-reduce work while the interpreter finalizes: that releases a Python object, so the thread takes the GIL
    and is ended by ``pthread_exit``, which aborts the process (``terminate called without an active
    exception``, SIGABRT; gdb: ``ProcessGroupGloo::runLoop`` -> ``~AsyncAllreduceWork`` -> ``gil_scoped_acquire``,
    the main thread in ``Py_FinalizeEx``): 3 runs in 42 with ours, where the epoch ends closer to the exit, none
    in 30 with torch's; none in 80 with this call.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    framework, which, out = sys.argv[1:4]
    torch.set_num_threads(1)
    {"lightning": run_lightning, "accelerate": run_accelerate}[framework](which, out)
    end_process_group()
