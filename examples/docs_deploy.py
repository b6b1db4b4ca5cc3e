"""The first snippet of docs/deploy.md, run on a tiny photo made here: ``python examples/docs_deploy.py``
(``--in DIR``: on ``DIR/cat.jpg``). The export and AOTInductor packaging are ``docs_deploy_export.py``."""

import _inputs

_inputs.enter(__doc__)

# --- docs/deploy.md ---
import torch, torchvision
from spdl_torch.deploy import DecodeResize
class Classifier(torch.nn.Module):                           # preprocess -> model -> softmax
    def __init__(self, preprocess: torch.nn.Module, model: torch.nn.Module):
        super().__init__()
        self.preprocess, self.model = preprocess, model
    def forward(self, data: torch.Tensor) -> torch.Tensor:     # BatchDecode's: data: List[torch.Tensor]
        return torch.softmax(self.model(self.preprocess(data)), dim=1)
module = Classifier(DecodeResize(224, 224), torchvision.models.resnet18(num_classes=10)).eval()
data = torch.ops.spdl_torch.read_file("cat.jpg")        # or torch.frombuffer(bytes, dtype=torch.uint8)

# --- the module runs on the file's bytes ---
with torch.no_grad():
    probs = module(data)
print(probs.shape)
assert probs.shape == (1, 10) and abs(float(probs.sum()) - 1.0) < 1e-5
