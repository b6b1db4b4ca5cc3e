"""Concurrent fetches issue their batch ops in the epoch's order (spdl_torch._batch_order): the ops serve calls
first come, first served, so a later batch that reached the pool first would finish first and hold back the one
the loader must deliver before it."""

import gc
import threading
import time

import pytest
import torch

import spdl_torch
from spdl_torch import _batch_order


@pytest.fixture(autouse=True)
def _threads_settle():
    """Each test ends once its loaders' threads have exited (they do shortly after an epoch ends), so that no
    later test counts them."""
    before = threading.active_count()
    yield
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)


class _Recording(torch.utils.data.Dataset):
    """Batches of 2; batch 0 reaches its "batch op" late (after a sleep), the others at once."""

    def __init__(self, n=8, late=0.2):
        self.n, self.late = n, late
        self.issued = []
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def spdl_native_loading(self):  # stands for a fused dataset: loads on threads
        return True

    def __getitems__(self, indices):
        if indices[0] == 0:
            time.sleep(self.late)
        _batch_order.before_batch_op()
        with self.lock:
            self.issued.append(indices[0] // 2)
        return [torch.tensor(i) for i in indices]


@pytest.mark.parametrize("in_order", [True, False])
def test_batch_ops_are_issued_in_the_epochs_order(in_order):
    ds = _Recording()
    loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2, in_order=in_order)
    got = [b.tolist() for b in loader]
    assert ds.issued == [0, 1, 2, 3]  # batch 1 waited for batch 0's op although it was ready first
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_the_order_follows_the_sampler():
    ds = _Recording(n=12, late=0.1)
    sampler = [7, 6, 0, 1, 5, 4, 3, 2, 11, 10, 9, 8]  # batch 0 (samples 0, 1) is the second batch
    loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2, sampler=sampler)
    list(loader)
    assert ds.issued == [3, 0, 2, 1, 5, 4]  # batch k = samples (2k, 2k+1), in the sampler's order


def test_fetches_without_batch_ops_still_run_concurrently():
    both = threading.Barrier(2, timeout=10)

    class Plain(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i in (0, 2):  # the first sample of batches 0 and 1 (one per worker) meet at the barrier
                both.wait()
            return i

    loader = spdl_torch.DataLoader(Plain(), batch_size=2, num_workers=2, worker_mode="thread")
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]


def test_a_failed_fetch_passes_its_turn_on(monkeypatch):
    from spdl_torch.dataloader._map import MapFetch

    monkeypatch.setattr(MapFetch, "issue_wait", 1000.0)  # a turn not passed on would hang the epoch

    class Failing(_Recording):
        def __getitem__(self, i):  # the per-sample retry of on_error="skip"
            raise ValueError(f"bad sample {i}")

        def __getitems__(self, indices):
            if indices[0] == 0:
                raise ValueError("bad batch 0")
            return super().__getitems__(indices)

    ds = Failing(late=0.0)
    errors = []

    def run():
        loader = spdl_torch.DataLoader(ds, batch_size=2, num_workers=2, in_order=False, on_error="skip")
        errors.append(len(list(loader)))

    with pytest.warns(UserWarning, match=r"DataLoader skipped sample index [01]: ValueError: bad sample"):
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(60)
    assert not t.is_alive(), "the fetches after a failed one waited for its turn"
    assert errors == [3] and ds.issued == [1, 2, 3]


def test_outside_a_loader_nothing_waits_and_the_ops_call_the_hook(tmp_path):
    _batch_order.before_batch_op()  # no hook: returns at once
    calls = []
    from PIL import Image

    p = tmp_path / "a.jpg"
    Image.new("RGB", (8, 6), (10, 20, 30)).save(p)
    data = spdl_torch.io.read_file(str(p))
    with _batch_order.hook_scope(lambda: calls.append("images")):
        spdl_torch.io.decode_images([data], height=4, width=4)
    from tests._utils.audio import make_audio
    from tests._utils.video import make_video, require_ffmpeg

    require_ffmpeg()
    video = make_video("h264_bframes")
    wav = make_audio(tmp_path / "a.wav", rate=8000, channels=1, codec="pcm_s16le")
    with _batch_order.hook_scope(lambda: calls.append("video")):
        spdl_torch.io.decode_video_clips([str(video)], num_frames_per_clip=2, height=8, width=8)
    with _batch_order.hook_scope(lambda: calls.append("audio")):
        spdl_torch.io.decode_audio_batch([str(wav)], sample_rate=8000, num_channels=1, duration=0.1)
    assert calls == ["images", "video", "audio"]
