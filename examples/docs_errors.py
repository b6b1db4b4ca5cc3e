"""The snippets of docs/errors.md: ``python examples/docs_errors.py`` (no input files)."""

import _inputs

_inputs.enter(__doc__)

# --- docs/errors.md, first snippet ---
import spdl_torch

try:
    spdl_torch.io.decode_image(b"\xff\xd8\xff\xe0 not a jpeg")
except spdl_torch.DecodeError as e:          # also a RuntimeError
    print(e.path, e.sample_index, e.reason)   # None None JPEG: ...

# --- second snippet, around a deployed module given bytes that are no image ---
import torch
from spdl_torch.deploy import DecodeResize

preprocess = DecodeResize(224, 224)
data = torch.frombuffer(bytearray(b"\xff\xd8\xff\xe0 not a jpeg"), dtype=torch.uint8)


def load(data):
    try:
        batch = preprocess(data)                        # a spdl_torch.deploy module, or torch.ops.spdl_torch.*
    except RuntimeError as e:
        raise spdl_torch.deploy.from_op_error(e) from e
    return batch


try:
    load(data)
except spdl_torch.DecodeError as e:
    print("DecodeError:", e.reason)
    assert e.reason.startswith("JPEG"), e.reason
else:
    raise AssertionError("bytes that are no image must raise spdl_torch.DecodeError")
