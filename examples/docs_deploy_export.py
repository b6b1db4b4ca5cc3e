"""The second snippet of docs/deploy.md: the first's module exported (``torch.export``) and packaged with
AOTInductor, which compiles C++ with g++ (about a minute on 2 cores). ``python examples/docs_deploy_export.py``
runs it on a tiny photo made here (``--in DIR``: on ``DIR/cat.jpg``); it writes ``classifier.pt2`` and
``classifier_aoti.pt2`` there."""

import _inputs

_inputs.enter(__doc__)

import torch
import torchvision
from spdl_torch.deploy import DecodeResize


class Classifier(torch.nn.Module):
    """The first snippet's: preprocess -> model -> softmax."""

    def __init__(self, preprocess: torch.nn.Module, model: torch.nn.Module):
        super().__init__()
        self.preprocess, self.model = preprocess, model

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.model(self.preprocess(data)), dim=1)


module = Classifier(DecodeResize(224, 224), torchvision.models.resnet18(num_classes=10)).eval()
data = torch.ops.spdl_torch.read_file("cat.jpg")

# --- docs/deploy.md, second snippet ---
program = torch.export.export(module, (data,), dynamic_shapes=({0: torch.export.Dim("nbytes", min=2)},))
torch.export.save(program, "classifier.pt2"); torch.export.load("classifier.pt2").module()(data)
pkg = torch._inductor.aoti_compile_and_package(program, package_path="classifier_aoti.pt2")   # CPU: g++
torch._inductor.aoti_load_package(pkg)(data)

# --- the packaged model gives the module's output ---
with torch.no_grad():
    expected = module(data)
torch.testing.assert_close(torch._inductor.aoti_load_package(pkg)(data), expected, rtol=1e-4, atol=1e-4)
print("classifier_aoti.pt2 gives the module's probabilities", tuple(expected.shape))
