"""Builds spdl_torch: one C++ extension (the ops library ``spdl_torch/_C*.so``) plus the Python package.

Libraries are found with pkg-config; a missing one stops the build with the Debian ``-dev`` package to
install. Build with ``pip install --no-build-isolation .`` (or ``-e .``) so the installed torch is used; the
package metadata is in pyproject.toml.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import setup

# torch.utils.cpp_extension reads CUDA_HOME when imported: point it at the toolkit, not at a wrapper's folder
# (/usr/local/bin/nvcc is a script that execs /usr/local/cuda-13.0/bin/nvcc).
if "CUDA_HOME" not in os.environ and "CUDA_PATH" not in os.environ and os.path.exists("/usr/local/cuda/bin/nvcc"):
    os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, include_paths  # noqa: E402

# pkg-config module -> Debian package that provides it
FFMPEG_MODULES = {
    "libavcodec": "libavcodec-dev",
    "libavformat": "libavformat-dev",
    "libavutil": "libavutil-dev",
    "libswscale": "libswscale-dev",
    "libswresample": "libswresample-dev",
}
JPEG_MODULES = {
    "libturbojpeg": "libturbojpeg0-dev",
    "libjpeg": "libjpeg62-turbo-dev",
}
# What a build without FFmpeg (SPDL_TORCH_FFMPEG=0) leaves out: FFmpeg's own code, video and audio (core and
# ops). csrc/core/without_ffmpeg.cpp and csrc/ops/ffmpeg_stubs.cpp then raise the errors that name it.
FFMPEG_SOURCES = ["csrc/core/detail/ffmpeg/*.cpp", "csrc/core/video_*.cpp", "csrc/core/audio_*.cpp",
                  "csrc/ops/video_*.cpp", "csrc/ops/decode_audio*.cpp"]


def _pkg_config(*args):
    return subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout.split()


def _with_ffmpeg():
    """SPDL_TORCH_FFMPEG=0 builds without FFmpeg (JPEG images only: no video, audio, PNG/GIF/WebP/BMP/TIFF/PNM);
    unset or 1: with it (a missing FFmpeg is then a build error naming its packages)."""
    value = os.environ.get("SPDL_TORCH_FFMPEG", "")
    if value not in ("", "0", "1"):
        sys.exit(f"spdl_torch: SPDL_TORCH_FFMPEG should be 0, 1 or unset, got {value!r}")
    return value != "0"


def _find_libraries(with_ffmpeg):
    if shutil.which("pkg-config") is None:
        sys.exit("spdl_torch: pkg-config not found; install it with: apt-get install pkg-config")
    wanted = {**FFMPEG_MODULES, **JPEG_MODULES} if with_ffmpeg else dict(JPEG_MODULES)
    missing = [m for m in wanted if subprocess.run(["pkg-config", "--exists", m]).returncode != 0]
    if missing:
        packages = " ".join(wanted[m] for m in missing)
        hint = "" if not with_ffmpeg or set(missing) - set(FFMPEG_MODULES) else \
            " (or SPDL_TORCH_FFMPEG=0 for a build without FFmpeg: JPEG images only, no video or audio)"
        sys.exit(f"spdl_torch: missing libraries {', '.join(missing)}; install them with: apt-get install {packages}"
                 + hint)
    modules = list(wanted)
    versions = {m: _pkg_config("--modversion", m)[0] for m in modules}
    include_dirs = [f[2:] for f in _pkg_config("--cflags-only-I", *modules)]
    library_dirs = [f[2:] for f in _pkg_config("--libs-only-L", *modules)]
    libraries = [f[2:] for f in _pkg_config("--libs-only-l", *modules)]
    return versions, include_dirs, library_dirs, libraries


def _nvcc_version(cuda_home):
    """(major, minor) of the toolkit's nvcc, or None."""
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    try:
        out = subprocess.run([nvcc, "--version"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for word in out.replace(",", " ").split():
        if word.startswith("V") and word[1:2].isdigit():
            major, minor = word[1:].split(".")[:2]
            return int(major), int(minor)
    return None


def _cuda_variant():
    """(build the CUDA variant?, CUDA_HOME, why). SPDL_TORCH_CUDA=1 forces it (an error if impossible), =0 forces
    the CPU variant; unset: CUDA when torch has CUDA and a toolkit of the same CUDA major version is found."""
    forced = os.environ.get("SPDL_TORCH_CUDA", "")
    if forced not in ("", "0", "1"):
        sys.exit(f"spdl_torch: SPDL_TORCH_CUDA should be 0, 1 or unset, got {forced!r}")
    if forced == "0":
        return False, None, "SPDL_TORCH_CUDA=0"
    home = cpp_extension.CUDA_HOME
    version = _nvcc_version(home) if home else None
    torch_cuda = torch.version.cuda
    why = None
    if torch_cuda is None:
        why = f"torch {torch.__version__} has no CUDA"
    elif version is None:
        why = "no CUDA toolkit found (nvcc; set CUDA_HOME)"
    elif version[0] != int(torch_cuda.split(".")[0]):
        why = f"nvcc {version[0]}.{version[1]} in {home} does not match torch's CUDA {torch_cuda}"
    if why is None:
        return True, home, f"nvcc {version[0]}.{version[1]} in {home}, torch CUDA {torch_cuda}"
    if forced == "1":
        sys.exit(f"spdl_torch: SPDL_TORCH_CUDA=1, but {why}")
    return False, None, why


def _find_nvjpeg(cuda_home):
    """(include dir, library dir, library file) of nvJPEG for torch's CUDA major version, or None: the PyPI wheel
    (nvidia-nvjpeg: site-packages/nvidia/cu<major>/), then the toolkit."""
    major = torch.version.cuda.split(".")[0]
    roots = [os.path.join(p, "nvidia", f"cu{major}") for p in sys.path if os.path.isdir(os.path.join(p, "nvidia"))]
    candidates = [(os.path.join(r, "include"), os.path.join(r, "lib")) for r in roots]
    candidates += [(os.path.join(cuda_home, "include"), os.path.join(cuda_home, d)) for d in ("lib64", "lib")]
    for inc, lib in candidates:
        name = f"libnvjpeg.so.{major}"
        if os.path.exists(os.path.join(inc, "nvjpeg.h")) and os.path.exists(os.path.join(lib, name)):
            return inc, lib, name
    return None


def _cuda_arch_list():
    # No GPU at build time: torch would build for every arch it knows. These cover Turing to Blackwell
    # (cu13 dropped older ones), plus PTX for newer chips; TORCH_CUDA_ARCH_LIST overrides it.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "7.5;8.0;9.0;10.0;12.0+PTX")
    return os.environ["TORCH_CUDA_ARCH_LIST"]


# Project includes are rooted at csrc/ (#include "core/detail/jpeg/jpeg_decoder.h").
CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")


def _extension():
    with_ffmpeg = _with_ffmpeg()
    versions, include_dirs, library_dirs, libraries = _find_libraries(with_ffmpeg)
    include_dirs.insert(0, CSRC)
    use_cuda, cuda_home, why = _cuda_variant()
    sources = sorted(f for f in glob.glob("csrc/**/*.cpp", recursive=True) if not f.startswith("csrc/cuda/"))
    defines = []
    if not with_ffmpeg:
        left_out = {f for pattern in FFMPEG_SOURCES for f in glob.glob(pattern)}
        sources = [f for f in sources if f not in left_out]
        defines.append("-DSPDL_TORCH_NO_FFMPEG=1")
    link_args = ["-Wl,--as-needed"]
    nvjpeg = None
    if use_cuda:
        sources += sorted(glob.glob("csrc/cuda/*.cpp") + glob.glob("csrc/cuda/*.cu"))
        defines.append("-DSPDL_TORCH_WITH_CUDA=1")
        nvjpeg = _find_nvjpeg(cuda_home)
        if nvjpeg is not None:
            inc, lib, name = nvjpeg
            include_dirs.append(inc)
            defines.append("-DSPDL_TORCH_WITH_NVJPEG=1")
            # found again at run time beside torch's own CUDA libraries, or where it was at build time
            link_args += [f"-L{lib}", f"-l:{name}", f"-Wl,-rpath,{lib}",
                          f"-Wl,-rpath,$ORIGIN/../nvidia/cu{torch.version.cuda.split('.')[0]}/lib"]
    # Libraries outside the system's directories (a prefix of unpacked packages, /opt/...) are found again at run
    # time where they were at build time.
    system_dirs = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu")
    link_args += [f"-Wl,-rpath,{os.path.normpath(d)}" for d in library_dirs if os.path.normpath(d) not in system_dirs]
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
    print(f"  variant        {'CUDA' if use_cuda else 'CPU'} ({why})")
    print(f"  ffmpeg         {'yes' if with_ffmpeg else 'no (SPDL_TORCH_FFMPEG=0: JPEG images only, no video or audio)'}")
    if use_cuda:
        print(f"  cuda archs     {_cuda_arch_list()}")
        print(f"  nvjpeg         {nvjpeg[1] + '/' + nvjpeg[2] if nvjpeg else 'not found: decode_images(device=cuda) is a stub'}"
              + ("" if nvjpeg else " (pip install nvidia-nvjpeg)"))
    for module, version in versions.items():
        print(f"  {module:<14} {version}")
    print(f"  sources        {len(sources)} files under csrc/")
    print(f"  flags          {' '.join(flags + defines)}")
    if use_cuda:
        # .cu files stay free of torch headers (fast to compile); -Xcompiler passes our warning flags through
        nvcc_flags = ["-O3", "--fmad=false", "-Xcompiler=-Wall,-Wextra,-fvisibility=hidden"]
        ext = CUDAExtension(
            name="spdl_torch._C",
            sources=sources,
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            libraries=libraries,
            extra_compile_args={"cxx": flags + defines + system_includes, "nvcc": nvcc_flags + defines},
            extra_link_args=link_args,
        )
    else:
        ext = CppExtension(
            name="spdl_torch._C",
            sources=sources,
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            libraries=libraries,
            extra_compile_args=flags + defines + system_includes,
            extra_link_args=link_args,
        )
    # The ops library must load in processes without Python (a C++ inference server): no libtorch_python.
    ext.libraries = [lib for lib in ext.libraries if lib != "torch_python"]
    return ext


# The package's metadata (name, version, dependencies, extras) is in pyproject.toml; this file adds the extension.
setup(
    # SPDL_TORCH_NO_EXTENSION=1 installs only the Python package (the Makefile then builds the extension
    # in place with `setup.py build_ext --inplace`, which keeps ninja's incremental build directory).
    ext_modules=[] if os.environ.get("SPDL_TORCH_NO_EXTENSION") == "1" else [_extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
