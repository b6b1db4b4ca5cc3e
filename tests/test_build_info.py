"""The build's CUDA variant: chosen by setup.py (SPDL_TORCH_CUDA, nvcc matching torch's CUDA), reported by
build_info, and the clear errors of a CUDA feature that the build, torch or the machine lacks."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import spdl_torch
from spdl_torch import build_info, cuda
from spdl_torch._build_info import nvjpeg_build

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def _configure(tmp_path, **env):
    """The configuration setup.py prints (``setup.py --name`` builds the extension's description only)."""
    full = dict(os.environ, **env)
    if spdl_torch.build_info()["ffmpeg"] == "0":  # configured as the running build: FFmpeg may be absent here
        full.setdefault("SPDL_TORCH_FFMPEG", "0")
    return subprocess.run([sys.executable, "setup.py", "--name"], cwd=REPO, env=full, capture_output=True,
                          text=True, timeout=180)


def _fake_toolkit(tmp_path, version):
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {version}, V{version}.1'\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path / "cuda")


def test_cuda_0_forces_the_cpu_variant(tmp_path):
    r = _configure(tmp_path, SPDL_TORCH_CUDA="0")
    assert r.returncode == 0, r.stderr
    assert "variant        CPU (SPDL_TORCH_CUDA=0)" in r.stdout


@pytest.mark.skipif(torch.version.cuda is None, reason="torch without CUDA: the CUDA variant is never chosen")
def test_a_toolkit_of_another_major_version_gives_the_cpu_variant(tmp_path):
    major = int(torch.version.cuda.split(".")[0])
    home = _fake_toolkit(tmp_path, f"{major - 1}.0")
    r = _configure(tmp_path, CUDA_HOME=home)
    assert r.returncode == 0, r.stderr
    assert f"variant        CPU (nvcc {major - 1}.0 in {home} does not match torch's CUDA {torch.version.cuda})" in r.stdout
    forced = _configure(tmp_path, CUDA_HOME=home, SPDL_TORCH_CUDA="1")
    assert forced.returncode != 0
    assert "SPDL_TORCH_CUDA=1, but nvcc" in forced.stderr


def test_cuda_1_without_a_toolkit_is_a_build_error(tmp_path):
    r = _configure(tmp_path, CUDA_HOME=str(tmp_path / "none"), SPDL_TORCH_CUDA="1")
    assert r.returncode != 0
    assert "SPDL_TORCH_CUDA=1, but" in r.stderr


def test_bad_cuda_value_is_a_build_error(tmp_path):
    r = _configure(tmp_path, SPDL_TORCH_CUDA="yes")
    assert r.returncode != 0 and "SPDL_TORCH_CUDA should be 0, 1 or unset, got 'yes'" in r.stderr


def test_build_info_matches_the_linked_libraries():
    info = build_info()
    assert info["variant"] in ("cuda", "cpu") and info["nvjpeg"] in ("0", "1")
    needed = subprocess.run(["readelf", "-d", spdl_torch._library.library_path], capture_output=True, text=True,
                            check=True).stdout
    assert ("libnvjpeg.so" in needed) == nvjpeg_build()


def test_the_library_is_the_variant_setup_py_chooses_here(tmp_path):
    """make test on a machine with nvcc matching torch's CUDA (these machines: 13.0) builds the CUDA variant."""
    r = _configure(tmp_path)
    assert r.returncode == 0, r.stderr
    chosen = "cuda" if "variant        CUDA" in r.stdout else "cpu"
    assert build_info()["variant"] == chosen, r.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the no-GPU errors do not apply")
class TestWithoutAGpu:
    def test_decode_images_on_cuda_names_the_cause(self, image_file):
        import numpy as np

        path = image_file("a.jpg", np.zeros((8, 8, 3), np.uint8))
        cause = "no CUDA device is available" if nvjpeg_build() else "built without"
        with pytest.raises(RuntimeError, match=r"decode_images\(device='cuda'\): .*" + cause):
            spdl_torch.io.decode_images([str(path)], height=4, width=4, device="cuda")

    def test_the_op_itself_names_the_cause(self):
        data = [torch.zeros(4, dtype=torch.uint8)]
        match = "does not exist" if nvjpeg_build() else "built without"
        with pytest.raises(RuntimeError, match=match):
            torch.ops.spdl_torch.decode_images_cuda(data, device_index=0, height=4, width=4)

    def test_transfer_and_loader_name_the_cause(self):
        with pytest.raises(RuntimeError, match="device='cuda': no CUDA device is available"):
            cuda.DeviceTransfer("cuda")
        with pytest.raises(ValueError, match="no CUDA device is available"):
            spdl_torch.DataLoader([torch.ones(2)], device="cuda:0")

    def test_normalize_kernel_names_the_cause(self):
        x = torch.zeros((1, 3, 2, 2), dtype=torch.uint8)
        with pytest.raises(RuntimeError, match="no CUDA device is available|built without CUDA"):
            cuda.normalize(x, torch.float32, impl="kernel")


def test_bad_arguments():
    with pytest.raises(ValueError, match="expected a CUDA device, got 'cpu'"):
        cuda.DeviceTransfer("cpu", backend=object())
    with pytest.raises(ValueError, match="expected an int depth >= 1"):
        cuda.DeviceTransfer("cuda", 0, backend=object())
    with pytest.raises(ValueError, match="transfer_depth should be an int >= 1"):
        spdl_torch.DataLoader([1], transfer_depth=0)
    with pytest.raises(ValueError, match="expected device None, 'cpu' or a CUDA device, got 'meta'"):
        spdl_torch.io.decode_images([b"x"], height=2, width=2, device="meta")
    with pytest.raises(ValueError, match="impl"):
        cuda.normalize(torch.zeros((1, 3, 1, 1), dtype=torch.uint8), torch.float32, impl="triton")
