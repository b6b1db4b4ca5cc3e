"""The Hugging Face snippet of docs/dataloader.md ("The datasets users already have"), run on 48 tiny photos made
here: ``python examples/docs_dataloader_hf.py`` (``--in DIR``: on ``DIR/data/imagenet_like/train``). It needs the
``hf`` extra (``pip install 'spdl_torch[hf]'``); the dataset's cache goes to this example's folder, offline."""

import importlib.util
import os
import sys

import _inputs

if importlib.util.find_spec("datasets") is None:
    sys.exit("this example needs Hugging Face's datasets: pip install 'spdl_torch[hf]'")
_inputs.enter(__doc__)
os.environ.setdefault("HF_DATASETS_CACHE", os.path.abspath("hf_cache"))
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch
from torchvision.transforms import v2

import spdl_torch

# the preset of the torchvision snippet before it
preset = v2.Compose([v2.RandomResizedCrop(176), v2.RandomHorizontalFlip(), v2.TrivialAugmentWide(),
                     v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True),
                     v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), v2.RandomErasing(0.1)])

# --- docs/dataloader.md, Hugging Face datasets ---
import datasets

hf = datasets.load_dataset("imagefolder", data_dir="data/imagenet_like/train", split="train")
train = spdl_torch.datasets.HFImageDataset(hf, image_column="image", label_column="label", transform=preset)
loader = spdl_torch.DataLoader(train, batch_size=32, shuffle=True, num_workers=4)

assert loader.resolved_worker_mode == "thread"
images, labels = next(iter(loader))
assert images.shape == (32, 3, 176, 176) and train.classes == ["cat", "dog"] and len(train) == 48
in_order = spdl_torch.DataLoader(train, batch_size=32)
assert next(iter(in_order))[1].tolist() == hf["label"][:32]  # the label column, as datasets gives it
