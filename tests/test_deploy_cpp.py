"""The C++ inference example (examples/cpp_inference): built with CMake against the installed torch, it loads
spdl_torch's ops library without Python, runs a TorchScript module and an AOTInductor package that call
torch.ops.spdl_torch.decode_image, and prints the same top-5 classes and probabilities as Python.

The build (about 20 s on 2 cores) goes to build/cpp_inference once per test run and is incremental afterwards.
"""

import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision

import spdl_torch
from spdl_torch.deploy import DecodeResize

from tests._utils.deploy import Classifier, DecodeUnchanged, gradient_image, gray16_png, tiny_cnn

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "examples" / "cpp_inference"
BUILD = ROOT / "build" / "cpp_inference"
TOP_K = 5


def _missing_tools() -> str | None:
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the C++ example needs cmake >= 3.18 and a C++20 compiler)"
    return None


@pytest.fixture(scope="session")
def spdl_infer() -> Path:
    reason = _missing_tools()
    if reason:
        pytest.skip(reason)
    import torch.utils

    start = time.monotonic()
    configure = [
        "cmake", "-S", str(SOURCE), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        f"-DSPDL_TORCH_OPS_LIBRARY={spdl_torch._library.library_path}",
        f"-DSPDL_TORCH_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
    ]
    for cmd in (configure, ["cmake", "--build", str(BUILD), f"-j{os.cpu_count() or 1}"]):
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    print(f"\nexamples/cpp_inference configured and built in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return BUILD / "spdl_infer"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """A seeded resnet18 (10 classes) as TorchScript, a tiny CNN as an AOTInductor package (about 26 s to
    compile on 2 cores with an empty Inductor cache, resnet18 about 31 s), three image files, and the Python
    top-k for each."""
    out = tmp_path_factory.mktemp("deploy")
    images = []
    for i, (w, h, fmt, ext) in enumerate([(64, 48, "JPEG", "jpg"), (50, 70, "PNG", "png"), (81, 33, "WEBP", "webp")]):
        path = out / f"image{i}.{ext}"
        path.write_bytes(gradient_image(w, h, fmt, i).numpy().tobytes())
        images.append(str(path))

    torch.manual_seed(0)
    script_model = Classifier(DecodeResize(64, 64), torchvision.models.resnet18(num_classes=10)).eval()
    aoti_model = Classifier(DecodeResize(32, 32), tiny_cnn()).eval()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.script / save are deprecated, still supported
        torch.jit.script(script_model).save(str(out / "classifier.pt"))

    aoti_package = None
    with torch.no_grad():
        example = torch.ops.spdl_torch.read_file(images[0])
        program = torch.export.export(
            aoti_model, (example,), dynamic_shapes=({0: torch.export.Dim("nbytes", min=2)},)
        )
        aoti_package = torch._inductor.aoti_compile_and_package(program, package_path=str(out / "classifier.pt2"))
        expected = {"script": {}, "aoti": {}}
        for path in images:
            data = torch.ops.spdl_torch.read_file(path)
            expected["script"][path] = script_model(data)[0]
            expected["aoti"][path] = aoti_model(data)[0]
    return dict(dir=out, images=images, script=str(out / "classifier.pt"), aoti=aoti_package, expected=expected)


def _run(binary: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300, env=env)


def _parse(stdout: str) -> dict:
    """``path \\t runner \\t class:prob ...`` lines -> {runner: {path: [(class, prob), ...]}}."""
    out = {}
    for line in stdout.splitlines():
        path, runner, *pairs = line.split("\t")
        out.setdefault(runner, {})[path] = [(int(c), float(p)) for c, p in (x.split(":") for x in pairs)]
    return out


def _check_top_k(got, probs: torch.Tensor):
    values, indices = probs.double().topk(TOP_K)
    assert [c for c, _ in got] == indices.tolist()
    torch.testing.assert_close(torch.tensor([p for _, p in got], dtype=torch.float64), values, rtol=0, atol=2e-6)


def test_aoti_package_runs_from_python(deployed):
    runner = torch._inductor.aoti_load_package(deployed["aoti"])
    with torch.no_grad():
        for path in deployed["images"]:
            probs = runner(torch.ops.spdl_torch.read_file(path))[0]
            torch.testing.assert_close(probs, deployed["expected"]["aoti"][path], rtol=1e-5, atol=1e-6)


def test_cpp_program_matches_python(spdl_infer, deployed):
    result = _run(spdl_infer, "--script", deployed["script"], "--aoti", deployed["aoti"], *deployed["images"])
    assert result.returncode == 0, result.stderr
    got = _parse(result.stdout)
    assert set(got) == {"script", "aoti"}
    for runner in ("script", "aoti"):
        assert list(got[runner]) == deployed["images"]
        for path in deployed["images"]:
            _check_top_k(got[runner][path], deployed["expected"][runner][path])


def test_cpp_program_runs_without_python(spdl_infer, deployed):
    # neither the binary nor the ops library needs libpython ...
    for lib in (spdl_infer, Path(spdl_torch._library.library_path)):
        ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
        assert "libpython" not in ldd, ldd
        assert "libtorch_python" not in ldd, ldd
    # ... and none is loaded at run time (LD_DEBUG=libs lists every object the loader opens, dlopen included),
    # with an environment that has no PYTHONPATH / virtualenv
    env = {"PATH": "/usr/bin:/bin", "LD_DEBUG": "libs"}
    args = ["--script", deployed["script"], "--aoti", deployed["aoti"], deployed["images"][0]]
    result = _run(spdl_infer, *args, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    loaded = [line for line in result.stderr.splitlines() if "calling init:" in line]
    assert any("_C." in line for line in loaded)  # the ops library was loaded ...
    assert not [line for line in loaded if "libpython" in line or "libtorch_python" in line]  # ... Python was not


def test_cpp_program_reports_errors(spdl_infer, deployed, tmp_path):
    result = _run(spdl_infer, "--ops-library", str(tmp_path / "missing.so"), "--script", deployed["script"], "x.jpg")
    assert result.returncode == 1 and "cannot load the ops library" in result.stderr
    result = _run(spdl_infer, "--script", deployed["script"])
    assert result.returncode == 2 and "no image files given" in result.stderr
    result = _run(spdl_infer, "--script", deployed["script"], str(tmp_path / "absent.jpg"))
    assert result.returncode == 1 and "cannot open" in result.stderr
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    result = _run(spdl_infer, "--script", deployed["script"], str(bad))
    assert result.returncode == 1 and "decode_image" in result.stderr


def test_cpp_program_unchanged_keeps_the_files_depth(spdl_infer, tmp_path):
    # the C++ program runs the op with dtype=None in UNCHANGED mode: the 16-bit PNG's own values (1000, 65535),
    # printed as the module's top-k "probabilities", not uint8 scaled down
    gray, data = gray16_png()
    png = tmp_path / "gray16.png"
    png.write_bytes(data.numpy().tobytes())
    module = tmp_path / "unchanged.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.jit.script(DecodeUnchanged()).save(str(module))
    result = _run(spdl_infer, "--script", str(module), "--top-k", "4", str(png))
    assert result.returncode == 0, result.stderr
    got = _parse(result.stdout)["script"][str(png)]
    flat = gray.reshape(-1).astype(np.float64)
    want = np.argsort(-flat, kind="stable")[:4]
    assert [v for _, v in got] == flat[want].tolist() and got[0][1] == 65535.0
    assert sorted(c for c, _ in got) == sorted(want.tolist())
