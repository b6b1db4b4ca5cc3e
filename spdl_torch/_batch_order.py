"""The order in which a loader's concurrent fetches issue their batch ops.

The batch ops (``decode_images``, ``decode_video_clips``, ``decode_audio_batch``) serve concurrent calls first
come, first served (``csrc/core/batch_turn.h``). A ``spdl_torch.DataLoader`` fetch sets a hook on its thread for
its duration; the ops' Python wrappers call :func:`before_batch_op` right before the native call, and the hook
holds the call until the batch the loader delivers before this one has issued its own (or finished), so batches
finish in the order they are delivered. Outside a loader's fetch nothing waits.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from ._thread_value import ThreadValue

__all__ = ["before_batch_op", "hook_scope"]

_hook = ThreadValue()


def hook_scope(hook: Callable[[], None] | None) -> AbstractContextManager[None]:
    """Sets the calling thread's hook for the duration of the block (a context manager), then restores the one
    before."""
    return _hook.scope(hook)


def before_batch_op() -> None:
    """Called by a batch op's wrapper right before the native call (in a loader's fetch: may wait its turn)."""
    hook = _hook.get()
    if hook is not None:
        hook()
