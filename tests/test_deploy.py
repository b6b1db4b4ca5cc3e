"""torch.compile, torch.export and TorchScript of preprocessing modules that call the ops
(``spdl_torch.deploy``): the compiled / exported / scripted program equals eager, and graph breaks happen
exactly where documented (docs/deploy.md).

Models are tiny seeded CNNs, so Inductor's CPU compile stays at seconds; the C++ side is tests/test_deploy_cpp.py.
"""

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

from spdl_torch.deploy import BatchDecode, DecodeResize

from tests._utils.deploy import BatchClassifier, Classifier, DecodeUnchanged, gradient_image, gray16_png, tiny_cnn

SIZE = 32


@pytest.fixture(scope="module")
def images():
    # different sizes and formats: the decode_image path sees a new (data-dependent) H, W for each
    return [gradient_image(64, 48, "JPEG", 0), gradient_image(50, 70, "PNG", 1), gradient_image(81, 33, "WEBP", 2)]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _single():
    return Classifier(DecodeResize(SIZE, SIZE), tiny_cnn()).eval()


def _batch():
    return BatchClassifier(BatchDecode(SIZE, SIZE), tiny_cnn()).eval()


# ---------------------------------------------------------------------------------------------- torch.compile


@pytest.mark.slow
@torch.no_grad()
def test_compile_batch_fullgraph_one_graph_equals_eager(images):
    module = _batch()
    expected = module(images)
    counter = CompileCounterWithBackend("eager")
    torch.compile(module, backend=counter, fullgraph=True)(images)
    assert counter.frame_count == 1  # decode_images, normalize and the model in one graph
    actual = torch.compile(module, fullgraph=True)(images)  # Inductor
    assert actual.shape == (3, 10)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


@torch.no_grad()
def test_compile_decode_image_without_flag_graph_breaks_at_the_op(images):
    module = _single()
    assert not torch._dynamo.config.capture_dynamic_output_shape_ops
    explanation = torch._dynamo.explain(module)(images[0])
    assert explanation.graph_break_count == 1
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(module, backend=counter)
    for data in images:
        torch.testing.assert_close(compiled(data), module(data), rtol=0, atol=0)
    # the op runs eagerly between two graphs: the rest of the preprocessing, and the model
    graph_ops = [str(n.target) for g in counter.graphs for n in g.graph.nodes]
    assert not any("decode_image" in op for op in graph_ops)


@torch.no_grad()
def test_compile_decode_image_fullgraph_without_flag(images):
    # torch >= 2.6: fullgraph=True lets Dynamo keep data-dependent output shapes (its ShapeEnv allows them when
    # one graph is required); older versions raise Unsupported ("Dynamic shape operator") here instead.
    module = _single()
    try:
        counter = CompileCounterWithBackend("eager")
        actual = torch.compile(module, backend=counter, fullgraph=True)(images[0])
    except torch._dynamo.exc.Unsupported as e:
        assert "decode_image" in str(e) and "capture_dynamic_output_shape_ops" in str(e)
        return
    assert counter.frame_count == 1
    torch.testing.assert_close(actual, module(images[0]), rtol=0, atol=0)


@pytest.mark.slow  # Inductor generates and compiles C++ for dynamic shapes
@torch.no_grad()
def test_compile_decode_image_with_flag_one_graph_equals_eager(images):
    module = _single()
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        counter = CompileCounterWithBackend("eager")
        torch.compile(module, backend=counter)(images[0])
        assert counter.frame_count == 1
        graph_ops = [str(n.target) for g in counter.graphs for n in g.graph.nodes]
        assert any("decode_image" in op for op in graph_ops)
        compiled = torch.compile(module, fullgraph=True)  # Inductor
        for data in images:  # H, W are unbacked symbols: new image sizes do not recompile
            torch.testing.assert_close(compiled(data), module(data), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- torch.export


@torch.no_grad()
def test_export_decode_image_save_load_run(images, tmp_path):
    module = _single()
    program = torch.export.export(module, (images[0],), dynamic_shapes=({0: torch.export.Dim("nbytes", min=2)},))
    targets = [str(n.target) for n in program.graph.nodes]
    assert "spdl_torch.decode_image.default" in targets
    path = tmp_path / "classifier.pt2"
    torch.export.save(program, path)
    loaded = torch.export.load(path).module()
    for data in images:  # other byte lengths and image sizes than the example
        torch.testing.assert_close(loaded(data), module(data), rtol=0, atol=0)


@torch.no_grad()
def test_export_batch_save_load_run(images, tmp_path):
    module = _batch()
    program = torch.export.export(module, (images,))
    assert "spdl_torch.decode_images.default" in [str(n.target) for n in program.graph.nodes]
    path = tmp_path / "batch.pt2"
    torch.export.save(program, path)
    loaded = torch.export.load(path).module()
    torch.testing.assert_close(loaded(images), module(images), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------- TorchScript


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.filterwarnings("ignore:`torch.jit.(save|load)` is deprecated:FutureWarning")
@pytest.mark.parametrize("make,single", [(_single, True), (_batch, False)], ids=["decode_image", "decode_images"])
@torch.no_grad()
def test_script_save_load_run(images, tmp_path, make, single):
    module = make()
    scripted = torch.jit.script(module)
    assert "spdl_torch::decode_image" in str(scripted.preprocess.graph)
    path = tmp_path / "classifier.pt"
    scripted.save(str(path))
    loaded = torch.jit.load(str(path))
    inputs = [[d] for d in images] if single else [[images]]
    for args in inputs:
        torch.testing.assert_close(loaded(*args), module(*args), rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_python_wrapper_is_not_the_scriptable_path():
    # spdl_torch.io.decode_image accepts paths/bytes/enums (Union types, isinstance on non-Tensors): script the
    # op or spdl_torch.deploy.DecodeResize instead
    with pytest.raises(Exception):
        torch.jit.script(__import__("spdl_torch").io.decode_image)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_script_unchanged_keeps_the_files_depth():
    # the op's dtype=None rule in TorchScript is the wrapper's: the file's 16 bits, not uint8 scaled down
    gray, data = gray16_png()
    scripted = torch.jit.script(DecodeUnchanged())
    np.testing.assert_array_equal(scripted(data).reshape(6, 9).numpy(), gray.astype(np.float64))
    image = torch.jit.script(_OpOnly())(data)
    assert image.dtype == torch.uint16 and int(image[0, 0, 0]) == 1000


class _OpOnly(torch.nn.Module):
    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return torch.ops.spdl_torch.decode_image(data, mode="UNCHANGED")


@pytest.mark.parametrize("bad", [dict(height=0), dict(mean=(0.5,)), dict(std=(1.0, 0.0, 1.0))])
def test_decode_resize_rejects_bad_arguments(bad):
    with pytest.raises(ValueError, match="DecodeResize: expected"):
        DecodeResize(**{"height": 8, "width": 8, **bad})


def test_batch_decode_rejects_bad_geometry():
    with pytest.raises(ValueError, match="geometry='train' is not supported"):
        BatchDecode(8, 8, geometry="train")

