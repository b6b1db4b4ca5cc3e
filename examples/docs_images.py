"""The snippets of docs/images.md, run on tiny inputs made here: ``python examples/docs_images.py``
(``--in DIR``: on ``cat.jpg``, ``a.png`` and ``data/imagenet_like/train`` in DIR)."""

import _inputs

_inputs.enter(__doc__)

# --- docs/images.md ---
import torch
import spdl_torch
from torchvision.transforms import v2

# One image: path, bytes or a uint8 tensor -> uint8 Tensor[C, H, W]
img = spdl_torch.io.decode_image("cat.jpg")                   # RGB, EXIF orientation applied
gray = spdl_torch.io.decode_image(open("a.png", "rb").read(), mode="GRAY")

# A batch in one native call: decode, resize 256, center crop 224 -> batch.data: uint8 Tensor[2, 3, 224, 224]
batch = spdl_torch.io.decode_images(["cat.jpg", "a.png"], height=224, width=224, resize_shorter=256)

# A dataset whose transform fuses into that call
ds = spdl_torch.datasets.ImageFolder("data/imagenet_like/train", transform=v2.Compose([
    v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ToDtype(torch.float32, scale=True),
    v2.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
print(ds)                                                      # the fused plan and the remainder

# --- what the comments promise (cat.jpg here is 400x300) ---
print(img.shape, gray.shape, batch.data.shape)
assert img.shape == (3, 300, 400) and gray.shape == (1, 300, 400) and batch.data.shape == (2, 3, 224, 224)
