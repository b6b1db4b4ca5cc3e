"""Bounded polling for tests: waits for a condition, never asserts on how long it took."""

import time

WAIT = 10.0  # generous timeout (s): only reached when the code under test is broken


def wait_until(cond, timeout: float = WAIT) -> bool:
    """Polls ``cond()`` every 2 ms until it is true (returns True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True
