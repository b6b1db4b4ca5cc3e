"""The decode op releases the GIL, and failing decodes leak nothing."""

import sys
import threading
import time

import numpy as np
import pytest

from spdl_torch import DecodeError
from spdl_torch.io import decode_image

from tests._utils import images


def _large_jpeg() -> bytes:
    y, x = np.mgrid[0:2400, 0:3200]
    rgb = np.stack([x % 256, y % 256, (x * y) % 256], -1).astype(np.uint8)
    return images.encode(rgb, "JPEG", quality=95)


def _progress_while(call) -> int:
    """How many times a second Python thread advanced while `call` ran in this thread.

    The switch interval is set far beyond the test's length, so the interpreter never forces a GIL
    hand-over: the counter thread can only run while this thread releases the GIL of its own accord.
    """
    counter = 0
    stop = threading.Event()

    def count():
        nonlocal counter
        while not stop.is_set():
            counter += 1
            time.sleep(0)  # releases the GIL: the calling thread gets it back as soon as it wants it

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=count)
    t.start()
    try:
        while counter == 0:  # wait (GIL released by sleep) until the counter thread runs
            time.sleep(0.001)
        before = counter
        call()
        return counter - before
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)


def test_decode_releases_the_gil():
    data = _large_jpeg()
    assert any(_progress_while(lambda: decode_image(data)) > 0 for _ in range(5))


def test_progress_probe_detects_a_gil_holder():
    # The negative control: pure Python work that holds the GIL lets the other thread make no progress.
    def busy():
        x = 0
        for i in range(3_000_000):
            x += i

    assert _progress_while(busy) == 0


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.parametrize("kind", ["truncated JPEG", "truncated PNG", "random bytes"])
def test_thousand_bad_decodes_keep_rss_flat(kind):
    rng = np.random.default_rng(0)
    encoded = images.encode(images.noise((256, 256, 3), rng), "JPEG" if "JPEG" in kind else "PNG")
    data = {"truncated JPEG": encoded[:5000], "truncated PNG": encoded[:-100]}.get(
        kind, rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    )

    def fail_n(n):
        for _ in range(n):
            with pytest.raises(DecodeError):
                decode_image(data)

    fail_n(200)  # warm up allocator pools and the thread's decoder
    before = _rss_bytes()
    fail_n(1000)
    growth = _rss_bytes() - before
    assert growth < 2 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 1,000 failing decodes"
