"""The datasets users already have, only the import changed: torch's DataLoader against spdl_torch's over the same
dataset object, in fresh processes, interleaved; medians and ratios.

    python -m benchmarks.bench_user_datasets --root data/imagenet_like [--reps 3] [--json FILE]
    python -m benchmarks.bench_user_datasets --root data/imagenet_like --fidelity   # pixel differences

Workloads (``WORKLOADS``; batch 32, 2 workers, ``--epochs`` (2) epochs per pass over the root's ``train`` files):

* ``ta_v1`` / ``ra_v1`` / ``aa_v1``, ``ta_v2`` / ``ra_v2`` / ``aa_v2``: ``torchvision.datasets.ImageFolder`` with
  torchvision's classification reference training preset (``references/classification/presets.py``'s
  ``ClassificationPresetTrain``, crop 176, TrivialAugmentWide / RandAugment / AutoAugment, ``random_erase=0.1``;
  ``v1``: ``torchvision.transforms``, ``v2``: ``use_v2=True``, both with its default PIL backend), the preset
  object as the reference builds it (a wrapper whose ``__call__`` calls its ``Compose``).
* ``mixup``: ``ta_v1`` and the reference ``train.py``'s collate: ``mixup_cutmix(*default_collate(batch))`` with
  ``v2.RandomChoice([v2.MixUp(alpha=0.2), v2.CutMix(alpha=1.0)])``.
* ``hf_folder`` / ``hf_parquet``: ``datasets.load_dataset("imagefolder", data_dir=train)`` / the same rows written
  to a local Parquet file with the image bytes, with the v2 ``ta`` preset; torch's DataLoader over the
  ``datasets`` object with ``set_transform`` (the preset on each decoded PIL image), ours over
  ``spdl_torch.datasets.HFImageDataset`` of the same object.

Contenders: ``torch`` (``torch.utils.data.DataLoader``), ``spdl`` (``spdl_torch.DataLoader`` over the same
object), ``patched`` (``torch.utils.data.DataLoader = spdl_torch.DataLoader`` before the loader is made), ``own``
(``spdl_torch.datasets.ImageFolder`` with the same preset: the reference for the HF rows).

images/s counts the images after the pass's first batch (from its arrival to the end); CPU per image is user +
system of the process and its children over the whole pass, start-up included.
``--fidelity`` prints the mean |difference| of spdl_torch's batches from torchvision's path (normalised values,
as ``Normalize`` leaves them): the eval preset (Resize 256, CenterCrop 224; and at 112 and 64, with and without
JPEG DCT scaling), and each train preset with
torchvision's own functions replaying the draws spdl_torch made (the crop box and flip from
``FusedPlan.sample_geometry``, the policy's ops from ``FusedPlan.sample_augmentation``, the erased box).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
PRESETS = ("ta_v1", "ra_v1", "aa_v1", "ta_v2", "ra_v2", "aa_v2")
WORKLOADS = (*PRESETS, "mixup", "hf_folder", "hf_parquet")
CONTENDERS = {w: ("torch", "spdl", "patched", "own") for w in (*PRESETS, "mixup")}
CONTENDERS.update({"hf_folder": ("torch", "spdl", "own"), "hf_parquet": ("torch", "spdl", "own")})
BATCH, WORKERS, EPOCHS = 32, 2, 2


class ClassificationPresetTrain:
    """The reference preset's shape (``references/classification/presets.py``): a plain object holding the
    pipeline in ``self.transforms`` and calling it."""

    def __init__(self, *, crop_size, auto_augment_policy, random_erase_prob, use_v2):
        import torch

        if use_v2:
            from torchvision.transforms import v2 as T
        else:
            import torchvision.transforms as T
        bl = T.InterpolationMode.BILINEAR
        trans = [T.RandomResizedCrop(crop_size, interpolation=bl, antialias=True), T.RandomHorizontalFlip(0.5)]
        if auto_augment_policy == "ra":
            trans.append(T.RandAugment(interpolation=bl, magnitude=9))
        elif auto_augment_policy == "ta_wide":
            trans.append(T.TrivialAugmentWide(interpolation=bl))
        else:
            trans.append(T.AutoAugment(policy=T.AutoAugmentPolicy(auto_augment_policy), interpolation=bl))
        trans.append(T.PILToTensor())
        trans += [T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
                  T.Normalize(mean=MEAN, std=STD)]
        if random_erase_prob > 0:
            trans.append(T.RandomErasing(p=random_erase_prob))
        if use_v2:
            trans.append(T.ToPureTensor())
        self.transforms = T.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


def preset(workload: str):
    policy = {"ta": "ta_wide", "ra": "ra", "aa": "imagenet", "mi": "ta_wide", "hf": "ta_wide"}[workload[:2]]
    use_v2 = workload.endswith("_v2") or workload.startswith("hf")
    return ClassificationPresetTrain(crop_size=176, auto_augment_policy=policy, random_erase_prob=0.1, use_v2=use_v2)


def _hf_dataset(workload: str, root: str):
    import datasets

    cache = os.path.join(os.path.dirname(os.path.abspath(root)), ".hf_cache")
    ds = datasets.load_dataset("imagefolder", data_dir=os.path.join(root, "train"), split="train", cache_dir=cache)
    if workload == "hf_folder":
        return ds
    path = os.path.join(os.path.dirname(os.path.abspath(root)), "imagenet_like_bytes.parquet")
    if not os.path.exists(path):  # the same rows with the files' bytes in the column
        def embed(row):
            with open(row["image"]["path"], "rb") as f:
                return {"image": {"bytes": f.read(), "path": os.path.basename(row["image"]["path"])}}
        ds.cast_column("image", datasets.Image(decode=False)).map(embed).cast_column(
            "image", datasets.Image()).to_parquet(path)
    return datasets.load_dataset("parquet", data_files=path, split="train", cache_dir=cache)


def one_pass(workload: str, contender: str, root: str, epochs: int = EPOCHS) -> dict:
    import resource

    import torch

    torch.set_num_threads(1)
    import torch.utils.data as tud
    import torchvision

    import spdl_torch

    train = os.path.join(root, "train")
    tf = preset(workload)
    kw: dict = {}
    if workload == "mixup":
        from torch.utils.data import default_collate
        from torchvision.transforms import v2

        classes = len(torchvision.datasets.folder.find_classes(train)[0])
        mixup_cutmix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=classes), v2.CutMix(alpha=1.0, num_classes=classes)])

        def collate_fn(batch):
            return mixup_cutmix(*default_collate(batch))

        kw["collate_fn"] = collate_fn
    if contender == "own":
        ds = spdl_torch.datasets.ImageFolder(train, transform=tf, warn_unfused=False)
    elif workload.startswith("hf"):
        hf = _hf_dataset(workload, root)
        if contender == "torch":
            def with_preset(batch):
                return {"image": [tf(im.convert("RGB")) for im in batch["image"]], "label": batch["label"]}

            hf.set_transform(with_preset)
            ds = hf
            kw["collate_fn"] = lambda rows: (torch.stack([r["image"] for r in rows]), torch.tensor([r["label"] for r in rows]))
        else:
            ds = spdl_torch.datasets.HFImageDataset(hf, transform=tf, warn_unfused=False)
    else:
        ds = torchvision.datasets.ImageFolder(train, transform=tf)
    if contender == "patched":  # what a library that builds its own loader then makes
        tud.DataLoader = spdl_torch.DataLoader
    make = spdl_torch.DataLoader if contender in ("spdl", "own") else tud.DataLoader
    loader = make(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, **kw)
    mode = getattr(loader, "resolved_worker_mode", "process")
    gc.collect()  # the first full collection after import before the window (benchmarks/README.md, Method)
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    n = total = 0
    first = None
    for _ in range(epochs):
        for images, _labels in loader:
            total += len(images)
            if first is None:
                first = time.perf_counter()
            else:
                n += len(images)
    end = time.perf_counter()
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(getattr(b, f) - getattr(a, f) for a, b in ((r0, r1), (c0, c1)) for f in ("ru_utime", "ru_stime"))
    return {"workload": workload, "contender": contender, "mode": mode, "images": total,
            "images_per_s": n / (end - first), "cpu_ms_per_image": 1000 * cpu / total, "first_batch_s": first - t0,
            "converted": "loads natively" in repr(loader) if contender in ("spdl", "patched") and not workload.startswith("hf") else None}


def run_pass(workload: str, contender: str, root: str, epochs: int = EPOCHS) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.bench_user_datasets", "--one", workload, contender, "--root", root,
           "--epochs", str(epochs)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=env, cwd=os.path.dirname(HERE))
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    """Median images/s and CPU per image per (workload, contender), the ratios to torch's and the spread of the
    per-repetition ratios (each repetition's pair ran back to back)."""
    lines = ["| workload | contender | images/s | CPU ms/image | images/s vs torch (range) | CPU/image vs torch |",
             "|---|---|---:|---:|---:|---:|"]
    for w in dict.fromkeys(r["workload"] for r in results):
        rows = [r for r in results if r["workload"] == w]
        base = [r for r in rows if r["contender"] == "torch"]
        tps = statistics.median(r["images_per_s"] for r in base) if base else None
        tcpu = statistics.median(r["cpu_ms_per_image"] for r in base) if base else None
        for c in dict.fromkeys(r["contender"] for r in rows):
            mine = [r for r in rows if r["contender"] == c]
            ips = statistics.median(r["images_per_s"] for r in mine)
            cpu = statistics.median(r["cpu_ms_per_image"] for r in mine)
            pairs = [m["images_per_s"] / b["images_per_s"] for m in mine for b in base if b["rep"] == m["rep"]]
            ratio = f"{ips / tps:.2f}x ({min(pairs):.2f}-{max(pairs):.2f})" if tps and c != "torch" else "-"
            cratio = f"{cpu / tcpu:.2f}x" if tcpu and c != "torch" else "-"
            lines.append(f"| {w} | {c}{' (not converted)' if mine[0]['converted'] is False else ''} "
                         f"| {ips:.0f} | {cpu:.2f} | {ratio} | {cratio} |")
    return "\n".join(lines)


SMALL_EVALS = ((128, 112), (73, 64))  # (Resize, CenterCrop) of the small eval recipes in --fidelity


def fidelity(root: str, images: int = 64) -> dict:
    """Mean |spdl_torch - torchvision| per recipe (see the module's docstring)."""
    import torch
    import torchvision
    from torchvision.transforms import autoaugment as AA
    from torchvision.transforms import functional as F

    import spdl_torch

    train = os.path.join(root, "train")
    out = {}
    ds = torchvision.datasets.ImageFolder(train)
    paths = [p for p, _ in ds.samples[:: max(1, len(ds.samples) // images)]][:images]
    import torchvision.transforms as T
    ev = T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])
    from torchvision.datasets.folder import pil_loader

    ref = torch.stack([ev(pil_loader(p)) for p in paths])
    tv = torchvision.datasets.ImageFolder(train, transform=ev)
    keep = set(paths)
    sub = torch.utils.data.Subset(tv, [i for i, (p, _) in enumerate(tv.samples) if p in keep])
    got = torch.cat([x for x, _ in spdl_torch.DataLoader(sub, batch_size=32)])
    out["eval"] = float((got - ref).abs().mean())
    for resize, crop in SMALL_EVALS:  # small outputs: JPEG DCT scaling shrinks more of the way
        small = T.Compose([T.Resize(resize), T.CenterCrop(crop), T.PILToTensor(), T.ConvertImageDtype(torch.float),
                           T.Normalize(MEAN, STD)])
        small_ref = torch.stack([small(pil_loader(p)) for p in paths])
        small_tv = torchvision.datasets.ImageFolder(train, transform=small)
        for dct in (None, 0.0):
            loader = spdl_torch.DataLoader(torch.utils.data.Subset(small_tv, sub.indices), batch_size=32)
            if dct is not None:  # the op's dct_min_ratio=0: no DCT scaling (not a loader option: measured here)
                loader._converter.view(small_tv).plan.op_kwargs["dct_min_ratio"] = dct
            got = torch.cat([x for x, _ in loader])
            out[f"eval_{crop}{'_no_dct_scaling' if dct is not None else ''}"] = float((got - small_ref).abs().mean())
    own = spdl_torch.datasets.ImageFolder(train, transform=ev, warn_unfused=False)
    got = torch.cat([x for x, _ in spdl_torch.DataLoader(torch.utils.data.Subset(own, sub.indices), batch_size=32)])
    out["own_eval"] = float((got - ref).abs().mean())
    for name in PRESETS:
        tf = preset(name)
        policy = tf.transforms.transforms[2]  # the preset's TrivialAugmentWide / RandAugment / AutoAugment
        tv = torchvision.datasets.ImageFolder(train, transform=tf)
        sub = torch.utils.data.Subset(tv, [i for i, (p, _) in enumerate(tv.samples) if p in keep])
        loader = spdl_torch.DataLoader(sub, batch_size=32, generator=torch.Generator().manual_seed(0))
        view = loader._converter.view(tv)
        plan = view.plan
        it = iter(loader)
        batches = [x for x, _ in it]
        got = torch.cat(batches)
        base_seed = it._base_seed if hasattr(it, "_base_seed") else None
        seeds = spdl_torch.transforms.FusedPlan.sample_seeds(base_seed, 0, sub.indices).tolist()
        refs = []
        for p, seed in zip(paths, seeds):
            img = pil_loader(p)
            g = plan.sample_geometry(seed, img.height, img.width)
            x = F.resized_crop(img, g.top, g.left, g.height, g.width, [176, 176], T.InterpolationMode.BILINEAR)
            if g.hflip:
                x = F.hflip(x)
            erase = None
            for op in plan.sample_augmentation(seed):
                if op.op == "erase":
                    erase = op.arguments
                elif op.name is not None and name.endswith("_v2"):  # v2's magnitudes (Solarize on 0..1) and rules
                    x = policy._apply_image_or_video_transform(x, op.name, float(op.magnitude or 0.0),
                                                               T.InterpolationMode.BILINEAR, policy._fill)
                elif op.name is not None:
                    x = AA._apply_op(x, op.name, float(op.magnitude or 0.0), T.InterpolationMode.BILINEAR, None)
            x = F.normalize(F.convert_image_dtype(F.pil_to_tensor(x), torch.float), MEAN, STD)
            if erase is not None and erase["mode"]:
                box = (int(erase[k]) for k in ("top", "left", "height", "width"))
                x = F.erase(x, *box, torch.tensor(erase["value"]).view(3, 1, 1))
            refs.append(x)
        out[name] = float((got - torch.stack(refs)).abs().mean())
        # spdl_torch's own ImageFolder, the same transform and loader seed (so the same draws where the plan is
        # the same: a v2 preset is given a tensor there)
        own = spdl_torch.datasets.ImageFolder(train, transform=preset(name), warn_unfused=False)
        loader = spdl_torch.DataLoader(torch.utils.data.Subset(own, sub.indices), batch_size=32,
                                       generator=torch.Generator().manual_seed(0))
        got = torch.cat([x for x, _ in loader])
        out[f"own_{name}"] = float((got - torch.stack(refs)).abs().mean())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the folder holding train/ (data/imagenet_like)")
    ap.add_argument("--one", nargs=2, metavar=("WORKLOAD", "CONTENDER"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=EPOCHS, help="epochs per pass")
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    ap.add_argument("--json")
    ap.add_argument("--fidelity", action="store_true")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_pass(*args.one, args.root, args.epochs)))
        return
    if args.fidelity:
        print(json.dumps(fidelity(args.root), indent=1))
        return
    runs = [(w, c) for w in args.workloads for c in CONTENDERS[w]]
    results = []
    for rep in range(args.reps):
        for w, c in runs[rep % len(runs):] + runs[:rep % len(runs)]:  # the order rotates per repetition
            r = run_pass(w, c, args.root, args.epochs)
            r["rep"] = rep
            results.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"load_avg_end": os.getloadavg(), "results": results}, f, indent=1)
    print(table(results))


if __name__ == "__main__":
    main()
