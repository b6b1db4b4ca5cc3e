"""Measurements shared by the benchmarks: CPU seconds and memory of a process tree, time to first batch,
and how much loading slows Python work in the consuming thread.

CPU time and PSS come from psutil (``/proc``). They are summed over this process and every descendant, so
worker processes (``torch.utils.data.DataLoader``) and worker threads (``spdl_torch.DataLoader``) are
counted alike.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psutil

__all__ = ["ResourceMonitor", "Usage", "python_step_seconds"]


@dataclass
class Usage:
    """What a :class:`ResourceMonitor` measured."""

    wall_s: float  # seconds between enter and exit
    cpu_s: float  # user + system CPU seconds of this process and all descendants in that window
    baseline_pss_bytes: int  # PSS of this process alone when the monitor started
    peak_pss_bytes: int  # highest PSS summed over this process and its live descendants, sampled

    @property
    def overhead_pss_bytes(self) -> int:
        """Loader memory overhead: peak PSS of the tree minus the consumer's PSS before loading started."""
        return self.peak_pss_bytes - self.baseline_pss_bytes


class ResourceMonitor:
    """Context manager sampling the process tree every ``interval_s`` seconds on a daemon thread.

    CPU seconds of descendants that exit inside the window are taken from the kernel's accounting of
    reaped children (``cpu_times().children_*``), so short-lived worker processes are counted in full.
    """

    def __init__(self, interval_s: float = 0.05) -> None:
        self._interval_s = interval_s
        self._me = psutil.Process()
        self._stop = threading.Event()
        self._last_cpu: dict[int, float] = {}  # live descendant pid -> last seen CPU seconds
        self._peak_pss = 0

    def _sample(self) -> None:
        total = 0
        procs = [self._me, *self._me.children(recursive=True)]
        for p in procs:
            try:
                total += p.memory_full_info().pss
                if p.pid != self._me.pid:
                    t = p.cpu_times()
                    self._last_cpu[p.pid] = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        self._peak_pss = max(self._peak_pss, total)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def __enter__(self) -> ResourceMonitor:
        t = self._me.cpu_times()
        self._start_cpu = t.user + t.system + t.children_user + t.children_system
        self._baseline_pss = self._me.memory_full_info().pss
        self._sample()
        self._start_children = {p.pid: v for p, v in ((p, self._cpu(p)) for p in self._me.children(True)) if v}
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True, name="resource-monitor")
        self._thread.start()
        return self

    @staticmethod
    def _cpu(p: psutil.Process) -> float:
        try:
            t = p.cpu_times()
            return t.user + t.system
        except psutil.NoSuchProcess:
            return 0.0

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()
        wall = time.perf_counter() - self._t0
        t = self._me.cpu_times()
        own_and_reaped = t.user + t.system + t.children_user + t.children_system - self._start_cpu
        live = {p.pid for p in self._me.children(recursive=True)}
        live_cpu = sum(v - self._start_children.get(pid, 0.0) for pid, v in self._last_cpu.items() if pid in live)
        self.usage = Usage(wall, own_and_reaped + live_cpu, self._baseline_pss, self._peak_pss)


def python_step_seconds(iterations: int = 200_000) -> float:
    """Seconds a fixed pure-Python busy loop takes in the calling thread: a stand-in for the Python part of
    a training step. Compare it with and without a loader running to see the loader's GIL pressure."""
    start = time.perf_counter()
    x = 0
    for i in range(iterations):
        x += i * i % 7
    return time.perf_counter() - start
