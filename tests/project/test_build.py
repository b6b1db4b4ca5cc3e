"""The build: a missing library names the Debian package to install; the ops library links no Python; the
package metadata (pyproject.toml) is the package's own."""

import os
import subprocess

import pytest
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow  # a setup.py run, ~2 s
def test_missing_libraries_name_their_debian_packages(tmp_path):
    env = dict(os.environ, PKG_CONFIG_LIBDIR=str(tmp_path), PKG_CONFIG_PATH="")  # pkg-config finds nothing
    result = subprocess.run(
        [sys.executable, "setup.py", "--name"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "missing libraries libavcodec, libavformat, libavutil, libswscale, libswresample, libturbojpeg, libjpeg" in result.stderr
    assert "apt-get install libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev libturbojpeg0-dev libjpeg62-turbo-dev" in result.stderr


def test_library_does_not_link_libpython_or_torch_python():
    import spdl_torch._library as lib

    needed = subprocess.run(["readelf", "-d", lib.library_path], capture_output=True, text=True, check=True).stdout
    assert "libtorch_python" not in needed and "libpython" not in needed
    assert "libturbojpeg" in needed and "libavcodec" in needed


def _setup_name(env_extra, pc_dir):
    env = dict(os.environ, PKG_CONFIG_LIBDIR=str(pc_dir), PKG_CONFIG_PATH="", **env_extra)
    return subprocess.run([sys.executable, "setup.py", "--name"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow  # two setup.py runs, ~5 s
def test_build_without_ffmpeg_needs_only_libjpeg_turbo(tmp_path):
    # pkg-config sees libjpeg-turbo's two modules and no FFmpeg
    for module in ("libturbojpeg", "libjpeg"):
        pc = subprocess.run(["pkg-config", "--path", module], capture_output=True, text=True, check=True).stdout.strip()
        (tmp_path / f"{module}.pc").write_text(Path(pc).read_text())
    full = _setup_name({}, tmp_path)
    assert full.returncode != 0
    assert "missing libraries libavcodec, libavformat, libavutil, libswscale, libswresample;" in full.stderr
    assert "or SPDL_TORCH_FFMPEG=0 for a build without FFmpeg" in full.stderr
    lean = _setup_name({"SPDL_TORCH_FFMPEG": "0"}, tmp_path)
    assert lean.returncode == 0, lean.stderr
    assert "ffmpeg         no (SPDL_TORCH_FFMPEG=0" in lean.stdout and "-DSPDL_TORCH_NO_FFMPEG=1" in lean.stdout
    assert _setup_name({"SPDL_TORCH_FFMPEG": "no"}, tmp_path).stderr.strip().endswith(
        "SPDL_TORCH_FFMPEG should be 0, 1 or unset, got 'no'")


def test_package_metadata_is_the_packages():
    import tomllib

    import spdl_torch

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "spdl_torch" and project["version"] == spdl_torch.__version__
    assert project["license"] == "BSD-3-Clause" and (REPO / project["license-files"][0]).exists()
    assert project["requires-python"] == ">=3.10"
    assert {"torch", "torchvision"} <= set(project["dependencies"])
    assert any(r.startswith("aiohttp") for r in project["optional-dependencies"]["remote"])  # HttpFetch
    # setup.py adds only the extension: no metadata of its own to drift from pyproject.toml's
    setup_py = (REPO / "setup.py").read_text()
    assert "version=" not in setup_py and "name=" not in setup_py.replace('name="spdl_torch._C"', "")
