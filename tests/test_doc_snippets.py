"""Every Python snippet of README.md and docs/*.md runs as written, on tiny inputs made here: photos named as the
snippets name them (``cat.jpg``, ``a.png``, ``data/imagenet_like/train/<class>/*.JPEG``), a short video and audio
files made with the ffmpeg CLI. Names a snippet leaves to the reader (``paths``, ``labels``, ...) are bound by a
per-snippet preamble; the few snippets that need what a test cannot have (a GPU, a remote host, a minute of g++)
are listed in SKIP with the reason, and the shapes the snippets' comments promise are checked after them."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
FFMPEG = shutil.which("ffmpeg")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _snippets():
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        for i, code in enumerate(blocks):
            yield pytest.param(page.name, i, code, id=f"{page.stem}-{i}")


# (page, block) -> why it is not run here.
SKIP = {
    ("cuda.md", 0): "needs a CUDA device (tests/cuda/test_gpu.py runs these calls on one)",
    ("errors.md", 1): "the pattern around a user's own preprocess() call",
    ("shards.md", 1): "needs shards with audio and video members (tests/datasets/shards/test_media_members.py)",
    ("deploy.md", 1): "torch.export + AOTInductor take about a minute of g++ (tests/deploy/test_compile_export.py)",
}
# (page, block) -> lines dropped before running: they name a host or a file the snippet only illustrates.
DROP = {
    ("shards.md", 0): ("https://host/",),
}
# (page, block) -> code run before the snippet (the names it leaves to the reader).
_LOADER = (
    "import spdl_torch\nfrom torchvision.transforms import v2\n"
    "dataset = spdl_torch.datasets.ImageFolder('data/imagenet_like/train', transform=v2.Compose(["
    "v2.Resize(64), v2.CenterCrop(48)]))\n"
    "loader = spdl_torch.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)\n")
PREAMBLE = {
    ("dataloader.md", 1): _LOADER,
    ("video.md", 0): "paths, labels = ['clip.mp4', 'clip.mp4'], [0, 1]",
    ("audio.md", 0): "paths, labels, seeds = ['speech.flac', 'speech.mp3', 'a.ogg'], [0, 1, 2], [1, 2, 3]",
    ("dataloader.md", 2): (
        "import spdl_torch\nfrom torchvision.transforms import v2\n"
        "dataset = spdl_torch.datasets.ImageFolder('data/imagenet_like/train', transform=v2.Compose(["
        "v2.Resize(64), v2.CenterCrop(48)]))\n"
        "loader = spdl_torch.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)\n"
        "_it = iter(loader); next(_it)"),
}
# (page, block) -> code run after the snippet: what its comments promise.
CHECK = {
    ("README.md", 0): "assert images.shape == (32, 3, 224, 224) and images.dtype == torch.float32 and labels.shape == (32,)",
    ("dataloader.md", 1): "assert loader.resolved_worker_mode == 'thread' and MyDataset().spdl_native_loading()",
    ("dataloader.md", 0): "assert images.shape == (16, 3, 224, 224) and labels.dtype == torch.int64",
    ("images.md", 0): "assert img.shape == (3, 300, 400) and gray.shape == (1, 300, 400) and batch.shape == (2, 3, 224, 224)",
    ("video.md", 0): "assert f.data.shape[0] == 1 and clips.shape == (2, 8, 16, 3, 112, 112)",
    ("audio.md", 0): "assert wav.shape[0] == 1 and b.samples.shape == (3, 1, 64000) and b.lengths.dtype == torch.int64",
    ("shards.md", 0): "assert images.shape == (12, 3, 224, 224) and labels.shape == (12,)",  # 48 samples, 4 workers
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A folder holding every input the snippets name."""
    root = tmp_path_factory.mktemp("snippets")
    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (root / "data/imagenet_like/train" / c).mkdir(parents=True)
        for i in range(24):  # 48 images: a batch of 32 and one of 16
            Image.fromarray(rng.integers(0, 255, (260 + i, 300, 3), dtype=np.uint8)).save(
                root / "data/imagenet_like/train" / c / f"{i}.JPEG")
    Image.fromarray(rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)).save(root / "cat.jpg")
    shutil.copy(root / "cat.jpg", root / "dog.jpg")
    Image.open(root / "cat.jpg").save(root / "a.png")
    if FFMPEG:
        def run(*a):
            subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-y", *a], check=True, capture_output=True)

        run("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=3", "-c:v", "libx264", "-preset",
            "ultrafast", "-g", "12", "-pix_fmt", "yuv420p", str(root / "clip.mp4"))
        for name in ("speech.flac", "speech.mp3", "a.ogg"):
            run("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=22050:duration=5", str(root / name))
    return root


@pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")  # num_workers=4 on 2 cores
@pytest.mark.parametrize(("page", "block", "code"), list(_snippets()))
def test_snippet_runs(page, block, code, world, monkeypatch):
    key = (page, block)
    if key in SKIP:
        pytest.skip(SKIP[key])
    if page in ("video.md", "audio.md") and not FFMPEG:
        pytest.skip("the ffmpeg CLI makes this snippet's inputs (apt-get install ffmpeg)")
    monkeypatch.chdir(world)
    lines = [ln for ln in code.splitlines() if not any(d in ln for d in DROP.get(key, ()))]
    namespace = {"torch": torch}
    exec(compile(PREAMBLE.get(key, ""), f"<preamble {page}>", "exec"), namespace)
    exec(compile("\n".join(lines), f"<{page} snippet {block}>", "exec"), namespace)
    exec(compile(CHECK.get(key, ""), f"<check {page}>", "exec"), namespace)
