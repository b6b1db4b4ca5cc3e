"""The snippets of docs/dataloader.md, in order, run on 48 tiny photos made here:
``python examples/docs_dataloader.py`` (``--in DIR``: on ``DIR/data/imagenet_like/train``)."""

import _inputs

_inputs.enter(__doc__)

# --- docs/dataloader.md, first snippet ---
import torch
from torchvision.transforms import v2
import spdl_torch
from spdl_torch.deploy import IMAGENET_MEAN, IMAGENET_STD

# A dataset and a loader: change only the import of DataLoader
transform = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224),
                        v2.ToDtype(torch.float32, scale=True),
                        v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
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
