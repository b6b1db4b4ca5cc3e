"""Builds spdl_torch: one C++ extension (the ops library ``spdl_torch/_C*.so``) plus the Python package.

Libraries are found with pkg-config; a missing one stops the build with the Debian ``-dev`` package to
install. Build with ``pip install --no-build-isolation -e .`` so the installed torch is used.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

# pkg-config module -> Debian package that provides it
PKG_CONFIG_MODULES = {
    "libavcodec": "libavcodec-dev",
    "libavformat": "libavformat-dev",
    "libavutil": "libavutil-dev",
    "libswscale": "libswscale-dev",
    "libswresample": "libswresample-dev",
    "libturbojpeg": "libturbojpeg0-dev",
    "libjpeg": "libjpeg62-turbo-dev",
}


def _pkg_config(*args):
    return subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout.split()


def _find_libraries():
    if shutil.which("pkg-config") is None:
        sys.exit("spdl_torch: pkg-config not found; install it with: apt-get install pkg-config")
    missing = [m for m in PKG_CONFIG_MODULES if subprocess.run(["pkg-config", "--exists", m]).returncode != 0]
    if missing:
        packages = " ".join(PKG_CONFIG_MODULES[m] for m in missing)
        sys.exit(f"spdl_torch: missing libraries {', '.join(missing)}; install them with: apt-get install {packages}")
    modules = list(PKG_CONFIG_MODULES)
    versions = {m: _pkg_config("--modversion", m)[0] for m in modules}
    include_dirs = [f[2:] for f in _pkg_config("--cflags-only-I", *modules)]
    library_dirs = [f[2:] for f in _pkg_config("--libs-only-L", *modules)]
    libraries = [f[2:] for f in _pkg_config("--libs-only-l", *modules)]
    return versions, include_dirs, library_dirs, libraries


def _extension():
    versions, include_dirs, library_dirs, libraries = _find_libraries()
    sources = sorted(glob.glob("csrc/**/*.cpp", recursive=True))
    debug = os.environ.get("SPDL_TORCH_DEBUG", "0") == "1"
    flags = ["-O0", "-g"] if debug else ["-O3"]
    flags += ["-Wall", "-Wextra", "-fvisibility=hidden"]
    # No implicit fused multiply-adds: GCC contracts a * b + c (intrinsics included) wherever the target
    # has FMA (-march=native, a target_clones clone), so pixel values would depend on the compiler and the
    # resample's AVX2 and generic paths could differ (they must be equal bit for bit: core_test).
    flags += ["-ffp-contract=off"]
    # torch's headers are system headers for us: -Wextra applies to our code, not theirs.
    system_includes = [arg for path in include_paths() for arg in ("-isystem", path)]
    print("spdl_torch build configuration:")
    for module, version in versions.items():
        print(f"  {module:<14} {version}")
    print(f"  sources        {len(sources)} files under csrc/")
    print(f"  flags          {' '.join(flags)}")
    ext = CppExtension(
        name="spdl_torch._C",
        sources=sources,
        include_dirs=include_dirs,
        library_dirs=library_dirs,
        libraries=libraries,
        extra_compile_args=flags + system_includes,
        extra_link_args=["-Wl,--as-needed"],
    )
    # The ops library must load in processes without Python (a C++ inference server): no libtorch_python.
    ext.libraries = [lib for lib in ext.libraries if lib != "torch_python"]
    return ext


setup(
    name="spdl_torch",
    version="0.1.0",
    description="Thread-based data loading for PyTorch with GIL-free native decode ops",
    packages=find_packages(include=["spdl_torch", "spdl_torch.*"]),
    python_requires=">=3.10",
    # remote tar shards (spdl_torch.datasets.TarShardDataset with http(s):// sources and the default fetch)
    extras_require={"remote": ["aiohttp>=3.9"]},
    # SPDL_TORCH_NO_EXTENSION=1 installs only the Python package (the Makefile then builds the extension
    # in place with `setup.py build_ext --inplace`, which keeps ninja's incremental build directory).
    ext_modules=[] if os.environ.get("SPDL_TORCH_NO_EXTENSION") == "1" else [_extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
