"""decode_images(device="cuda") refuses the CPU-only geometry arguments before any GPU work (so also here)."""

import pytest

from spdl_torch.io import decode_images
from tests._utils.images import encode_tensor, noise


@pytest.mark.parametrize("kwargs, name", [
    (dict(vflip_prob=0.5), "vflip_prob"),
    (dict(max_size=300), "max_size"),
    (dict(geometry="random_crop", resize_shorter=64), "geometry"),
    (dict(color="gray"), "color"),
    (dict(interpolation="nearest"), "interpolation"),
])
def test_cpu_only_arguments_are_refused_on_cuda(kwargs, name):
    data = encode_tensor(noise((48, 64, 3)), "JPEG")
    args = dict(height=32, width=32, device="cuda")
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"device='cuda' does not support {name}"):
        decode_images([data], **args)
