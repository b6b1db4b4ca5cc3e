"""The first snippet of docs/deploy.md, run on a tiny photo made here: ``python examples/docs_deploy.py``
(``--in DIR``: on ``DIR/cat.jpg``). The export and AOTInductor packaging are ``docs_deploy_export.py``."""

import _inputs

_inputs.enter(__doc__)

# --- docs/deploy.md ---
import torch, torchvision
from spdl_torch.deploy import Classifier, DecodeResize
module = Classifier(DecodeResize(224, 224), torchvision.models.resnet18(num_classes=10)).eval()
data = torch.ops.spdl_torch.read_file("cat.jpg")        # or torch.frombuffer(bytes, dtype=torch.uint8)

# --- the module runs on the file's bytes ---
with torch.no_grad():
    logits = module(data)
print(logits.shape)
assert logits.shape == (1, 10)
