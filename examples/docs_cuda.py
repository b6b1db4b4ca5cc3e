"""The snippet of docs/cuda.md, on a CUDA device: ``python examples/docs_cuda.py`` runs it on tiny photos made
here (``--in DIR``: on ``cat.jpg``, ``dog.jpg`` and ``data/imagenet_like/train`` in DIR)."""

import sys

import _inputs

_inputs.enter(__doc__)

import torch

if not torch.cuda.is_available():
    sys.exit("docs_cuda.py needs a CUDA device")

import spdl_torch
from spdl_torch.pipeline import PipelineBuilder

# the pipeline the snippet's last line moves to the GPU: batches of four decoded photos
pipeline = (PipelineBuilder().add_source(["cat.jpg", "dog.jpg"] * 4)
            .aggregate(4).pipe(lambda p: spdl_torch.io.decode_images(p, height=224, width=224)).add_sink(2).build())

# --- docs/cuda.md ---
import torch
from torchvision.transforms import v2
import spdl_torch
from spdl_torch.datasets import ImageFolder

root, paths = "data/imagenet_like/train", ["cat.jpg", "dog.jpg"]
mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's
loader = spdl_torch.DataLoader(ImageFolder(root, transform=v2.Compose([v2.RandomResizedCrop(224),
    v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])),
    batch_size=256, num_workers=4, device="cuda", transfer_depth=2)   # float32 batches on the GPU
batch = spdl_torch.io.decode_images(paths, height=224, width=224, resize_shorter=256, device="cuda").data  # nvJPEG
stream = spdl_torch.cuda.to_device(pipeline, "cuda", depth=2)         # the transfer as a pipeline stage

# --- what the comments promise ---
images, labels = next(iter(loader))
print(images.device, images.dtype, batch.device, batch.shape)
assert images.is_cuda and images.dtype == torch.float32 and batch.is_cuda and batch.shape == (2, 3, 224, 224)
assert all(b.is_cuda and b.shape == (4, 3, 224, 224) for b in stream)
