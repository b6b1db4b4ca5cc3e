"""Saves the models that examples/cpp_inference/spdl_infer runs, and prints Python's top-5 for comparison.

    .venv/bin/python examples/cpp_inference/export_models.py --out build/models [--aoti] image.jpg ...

writes build/models/classifier.pt (TorchScript) and, with --aoti, build/models/classifier.pt2 (AOTInductor):
Classifier(DecodeResize(size, size), torchvision.models.<model>(num_classes=...)) (defined here: preprocess ->
model -> softmax) with random weights seeded by --seed (no downloads). Each takes one encoded image (1-D uint8
tensor) and returns probabilities [1, K].
"""

import argparse
import time
import warnings
from pathlib import Path

import torch
import torchvision

from spdl_torch.deploy import DecodeResize


class Classifier(torch.nn.Module):
    """``preprocess`` (a ``DecodeResize``) then ``model`` then softmax: one encoded image (1-D uint8 tensor) ->
    probabilities float32 Tensor[1, K]. TorchScript-scriptable when ``model`` is."""

    def __init__(self, preprocess: torch.nn.Module, model: torch.nn.Module) -> None:
        super().__init__()
        self.preprocess = preprocess
        self.model = model

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.model(self.preprocess(data)), dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="image files: print Python's top-5 for each")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="resnet18", help="a torchvision.models constructor name")
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--size", type=int, default=224, help="input height and width of the model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--aoti", action="store_true", help="also export and AOTInductor-compile (~30 s on 2 cores)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = getattr(torchvision.models, args.model)(num_classes=args.num_classes)
    module = Classifier(DecodeResize(args.size, args.size), model).eval()
    args.out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated but supported
        torch.jit.script(module).save(str(args.out / "classifier.pt"))
    print(f"wrote {args.out / 'classifier.pt'}")
    if args.aoti:
        start = time.monotonic()
        example = torch.ops.spdl_torch.read_file(args.images[0]) if args.images else _example()
        with torch.no_grad():
            program = torch.export.export(module, (example,), dynamic_shapes=({0: torch.export.Dim("nbytes", min=2)},))
            path = torch._inductor.aoti_compile_and_package(program, package_path=str(args.out / "classifier.pt2"))
        print(f"wrote {path} in {time.monotonic() - start:.1f} s")
    with torch.no_grad():
        for image in args.images:
            probs = module(torch.ops.spdl_torch.read_file(image))[0].double()
            values, indices = probs.topk(min(5, probs.numel()))
            print("\t".join([image, "python"] + [f"{i}:{v:.7f}" for i, v in zip(indices.tolist(), values.tolist())]))


def _example() -> torch.Tensor:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (128, 64, 32)).save(buf, "PNG")
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


if __name__ == "__main__":
    main()
