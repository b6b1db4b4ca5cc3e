"""A fake CUDA backend for the transfer stage: streams and events that record what was asked of them, copies
that clone on the CPU. Lets the stream/event/record_stream bookkeeping be tested without a GPU."""

import contextlib
import itertools

import torch

_ids = itertools.count()


class FakeEvent:
    def __init__(self, log):
        self.id = next(_ids)
        self.log = log
        self.recorded_on = None

    def record(self, stream):
        self.recorded_on = stream
        self.log.append(("record", self.id, stream.name))


class FakeStream:
    def __init__(self, name, log):
        self.name = name
        self.log = log

    def wait_event(self, event):
        self.log.append(("wait", event.id, self.name))

    def wait_stream(self, other):
        self.log.append(("wait_stream", other.name, self.name))


class FakeBackend:
    def __init__(self, device=None):
        self.log = []
        self.active = None
        self.consumer = FakeStream("consumer", self.log)
        self.streams = []
        self.copies = []  # (source tensor, the stream it was queued on)
        self.recorded = []  # (device tensor, stream)

    def new_stream(self):
        s = FakeStream(f"side{len(self.streams)}", self.log)
        self.streams.append(s)
        return s

    def current_stream(self):
        return self.consumer

    def new_event(self):
        return FakeEvent(self.log)

    @contextlib.contextmanager
    def use_stream(self, stream):
        previous, self.active = self.active, stream
        try:
            yield
        finally:
            self.active = previous

    def copy(self, t):
        self.copies.append((t, self.active.name if self.active else None))
        self.log.append(("copy", t.dtype, self.active.name if self.active else None))
        return t.clone()

    def record_stream(self, t, stream):
        self.recorded.append((t, stream.name))
        self.log.append(("record_stream", stream.name))


def fake_pinning(monkeypatch):
    """Tensors "pinned" without CUDA: the op's pin_memory=True is recorded and its output counted as pinned;
    Tensor.pin_memory is a spy that copies (as the real one does) and marks the copy pinned."""
    import spdl_torch.io

    pinned: set[int] = set()
    keep: list[torch.Tensor] = []
    op_calls: list[dict] = []
    pin_calls: list[torch.Tensor] = []
    real_decode = spdl_torch.io.decode_images

    def decode_images(srcs, **kw):
        op_calls.append(dict(kw))
        pin = kw.pop("pin_memory", False)
        out = real_decode(srcs, pin_memory=False, **kw)
        batch = out.data  # an ImageBatch whatever strict is
        if pin:
            pinned.add(id(batch))
            keep.append(batch)
        return out

    def pin_memory(self, device=None):
        pin_calls.append(self)
        copy = self.clone()
        pinned.add(id(copy))
        keep.append(copy)
        return copy

    monkeypatch.setattr(spdl_torch.io, "decode_images", decode_images)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self, device=None: id(self) in pinned)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    return op_calls, pin_calls
