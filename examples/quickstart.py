"""The README's quickstart: ``python examples/quickstart.py`` runs it on 48 tiny photos made here (``--in DIR``:
on ``DIR/data/imagenet_like/train``, e.g. after ``make demo``)."""

import _inputs

_inputs.enter(__doc__)

# --- README.md ---
import torch
from torchvision.transforms import v2
import spdl_torch

transform = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224),
                        v2.ToDtype(torch.float32, scale=True),
                        v2.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
dataset = spdl_torch.datasets.ImageFolder("data/imagenet_like/train", transform=transform)
print(dataset)          # the transform fused into one decode_images call per batch
loader = spdl_torch.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
for images, labels in loader:
    print(images.shape, images.dtype, labels.shape)
    # torch.Size([32, 3, 224, 224]) torch.float32 torch.Size([32])
    break

# --- what the comments promise ---
assert images.shape == (32, 3, 224, 224) and images.dtype == torch.float32 and labels.shape == (32,)
