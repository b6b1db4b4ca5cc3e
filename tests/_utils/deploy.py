"""What the deploy tests of both sides share (tests/test_deploy.py, tests/test_deploy_cpp.py): encoded test
images, a tiny seeded CNN, the classifier a user writes around a ``spdl_torch.deploy`` module (preprocess ->
model -> softmax, docs/deploy.md: the example's own), a module that decodes in UNCHANGED mode, and a 16-bit PNG."""

from pathlib import Path
from typing import List

import numpy as np
import torch

from tests._utils.images import encode_tensor
from tests._utils.modules import load_file


def gradient_image(width: int, height: int, fmt: str, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    # a smooth gradient plus noise: resizing it is not trivially constant
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack([xx * 255 // max(width - 1, 1), yy * 255 // max(height - 1, 1), (xx + yy) % 256], -1)
    pixels = np.clip(base + rng.integers(-20, 21, base.shape), 0, 255).astype(np.uint8)
    return encode_tensor(pixels, fmt)


def tiny_cnn(num_classes: int = 10, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, num_classes),
    ).eval()


# The Classifier examples/cpp_inference/export_models.py writes (the one a user writes, docs/deploy.md)
Classifier = load_file(Path(__file__).resolve().parents[2] / "examples" / "cpp_inference" / "export_models.py",
                       "_export_models_example").Classifier


class BatchClassifier(torch.nn.Module):
    """As :class:`Classifier` for a list of N encoded images (with a ``BatchDecode``) -> Tensor[N, K] (TorchScript
    needs the argument's type in the signature, hence a second class)."""

    def __init__(self, preprocess: torch.nn.Module, model: torch.nn.Module) -> None:
        super().__init__()
        self.preprocess = preprocess
        self.model = model

    def forward(self, data: List[torch.Tensor]) -> torch.Tensor:
        return torch.softmax(self.model(self.preprocess(data)), dim=1)


class DecodeUnchanged(torch.nn.Module):
    """The op in UNCHANGED mode with dtype=None, as float64 Tensor[1, C * H * W] (what the C++ program prints)."""

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return torch.ops.spdl_torch.decode_image(data, mode="UNCHANGED").to(torch.float64).reshape(1, -1)


def gray16_png() -> tuple[np.ndarray, torch.Tensor]:
    """A 16-bit grey PNG with values that uint8 cannot hold (1000, 65535, ...) and its pixels."""
    import io

    from PIL import Image

    gray = (np.arange(6 * 9, dtype=np.uint32).reshape(6, 9) * 1543 % 65536).astype(np.uint16)
    gray[0, 0], gray[5, 8] = 1000, 65535
    buf = io.BytesIO()
    Image.fromarray(gray).save(buf, "PNG")
    return gray, torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
