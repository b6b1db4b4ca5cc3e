"""The snippets of docs/dataloader.md, in order (those of "The datasets users already have" last: they bind
``loader`` anew; the Hugging Face one is in docs_dataloader_hf.py), run on 48 tiny photos made here:
``python examples/docs_dataloader.py`` (``--in DIR``: on ``DIR/data/imagenet_like/train``)."""

import _inputs

_inputs.enter(__doc__)

# --- docs/dataloader.md, first snippet ---
import torch
from torchvision.transforms import v2
import spdl_torch

# A dataset and a loader: change only the import of DataLoader
transform = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224),
                        v2.ToDtype(torch.float32, scale=True),
                        v2.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
dataset = spdl_torch.datasets.ImageFolder("data/imagenet_like/train", transform=transform)
loader = spdl_torch.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
for images, labels in loader:          # images: float32 [32, 3, 224, 224], labels: int64 [32]
    ...

print(images.shape, labels.dtype)      # the last batch of the 48 photos: 16
assert images.shape == (16, 3, 224, 224) and labels.dtype == torch.int64

# --- second snippet ---
class MyDataset(torch.utils.data.Dataset):
    def spdl_native_loading(self):    # its work releases the GIL: load it on threads
        return True

print(loader.resolved_worker_mode)    # "thread" for the fused ImageFolder above
hybrid = spdl_torch.DataLoader(dataset, batch_size=32, num_workers=4, worker_mode="hybrid")
print(hybrid)                         # ... worker_mode='hybrid': decodes natively on 4 worker threads, runs ...

assert loader.resolved_worker_mode == "thread" and MyDataset().spdl_native_loading()

# --- third snippet, mid-epoch: one of the epoch's two batches taken ---
it = iter(loader)
next(it)

state = loader.state_dict()                      # mid-epoch
loader2 = spdl_torch.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
loader2.load_state_dict(state)                   # the rest of the epoch, in the same order

loader = spdl_torch.DataLoader(dataset, batch_size=32, num_workers=4, on_error="skip")
for images, labels in loader:
    ...
print(loader.skipped_samples)                    # the indices dropped with a warning

rest = list(loader2)
assert [len(labels) for _, labels in rest] == [16]  # the batch that was still to come

# --- the datasets users already have: torchvision's ImageFolder, unchanged ---
import torchvision

preset = v2.Compose([v2.RandomResizedCrop(176), v2.RandomHorizontalFlip(), v2.TrivialAugmentWide(),
                     v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True),
                     v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), v2.RandomErasing(0.1)])
train = torchvision.datasets.ImageFolder("data/imagenet_like/train", transform=preset)
loader = spdl_torch.DataLoader(train, batch_size=32, shuffle=True, num_workers=4)
print(loader)       # ... ImageFolder loads natively (48 samples; the transform's input: PIL images): fused into ...
as_written = spdl_torch.DataLoader(train, batch_size=32, num_workers=4, convert_dataset=False)  # torchvision's code

assert "ImageFolder loads natively (48 samples; the transform's input: PIL images)" in repr(loader)
assert loader.resolved_worker_mode == "thread" and as_written.resolved_worker_mode == "process"
images, labels = next(iter(loader))
assert images.shape == (32, 3, 176, 176) and images.dtype == torch.float32

# --- a dataset class of your own: spdl_source ---
class Photos(torch.utils.data.Dataset):
    def __init__(self, files, labels, transform):
        self.files, self.labels, self.transform = files, labels, transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):       # torch's DataLoader runs this
        image = torchvision.io.decode_image(self.files[index], mode=torchvision.io.ImageReadMode.RGB)
        return self.transform(image), self.labels[index]

    def spdl_source(self, index):       # spdl_torch.DataLoader reads this and decodes natively
        return self.files[index], self.labels[index]

files = sorted(str(p) for p in __import__("pathlib").Path("data/imagenet_like/train").rglob("*.JPEG"))
photos = Photos(files, [0 if "/cat/" in f else 1 for f in files], transform)
native = spdl_torch.DataLoader(photos, batch_size=16, num_workers=2)
assert "Photos loads natively (48 samples; the transform's input: tensors)" in repr(native)
got = next(iter(native))[0]
theirs = torch.stack([photos[i][0] for i in range(16)])  # its own __getitem__: torchvision's decoder
assert got.shape == theirs.shape and (got - theirs).abs().mean() < 0.02

# --- MixUp / CutMix in the collate_fn (torchvision's reference train.py) ---
from torch.utils.data import default_collate

mixup_cutmix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=len(train.classes)),
                                v2.CutMix(alpha=1.0, num_classes=len(train.classes))])

def collate_fn(batch):
    return mixup_cutmix(*default_collate(batch))

loader = spdl_torch.DataLoader(train, batch_size=32, shuffle=True, num_workers=4, collate_fn=collate_fn)

images, labels = next(iter(loader))
assert images.shape == (32, 3, 176, 176) and labels.shape == (32, 2)  # one-hot, mixed
