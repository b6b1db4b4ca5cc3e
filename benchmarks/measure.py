"""Measurements shared by the benchmarks: CPU seconds and memory of a process tree, time to first batch,
and how much loading slows Python work in the consuming thread.

CPU time and PSS come from psutil (``/proc``). They are summed over this process and every descendant, so
worker processes (``torch.utils.data.DataLoader``) and worker threads (``spdl_torch.DataLoader``) are
counted alike.

Two numbers come from the same samples:

* ``overhead_pss_bytes``: peak PSS of the tree minus the consumer's PSS before loading started. File pages
  (the shared libraries) are in it, and their PSS share changes whenever another program on the machine
  maps or unmaps the same files (another torch process), so it is noisy on a shared machine.
* ``overhead_anon_bytes``: the same over anonymous and shared memory only (``Pss_Anon + Pss_Shmem`` of
  ``/proc/<pid>/smaps_rollup``), plus shared memory that no process of the tree maps: a batch that a
  torch worker has put into its queue lives in shared memory that, until the consumer receives it, no
  process maps, so no PSS counts it. That part is estimated from the machine's ``Shmem``
  (``/proc/meminfo``) and assumes no other program changes its shared memory meanwhile.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass

import psutil

__all__ = ["ResourceMonitor", "Usage", "python_step_seconds"]


@dataclass
class Usage:
    """What a :class:`ResourceMonitor` measured."""

    wall_s: float  # seconds between enter and exit
    cpu_s: float  # user + system CPU seconds of this process and all descendants in that window, less monitor_cpu_s
    baseline_pss_bytes: int  # PSS of this process alone when the monitor started
    peak_pss_bytes: int  # highest PSS summed over this process and its live descendants, sampled
    baseline_anon_bytes: int = 0  # anonymous + shared PSS of this process alone when the monitor started
    peak_anon_bytes: int = 0  # highest anonymous + shared PSS of the tree + shared memory nobody maps
    monitor_cpu_s: float = 0.0  # CPU seconds the monitor's own sampling took (not in cpu_s)

    @property
    def overhead_pss_bytes(self) -> int:
        """Loader memory overhead: peak PSS of the tree minus the consumer's PSS before loading started."""
        return self.peak_pss_bytes - self.baseline_pss_bytes

    @property
    def overhead_anon_bytes(self) -> int:
        """Overhead in anonymous and shared memory, counting torch's batches in transit (see the module
        docstring)."""
        return self.peak_anon_bytes - self.baseline_anon_bytes


def _pss(pid: int) -> tuple[int, int, int]:
    """(PSS, PSS of anonymous memory, PSS of shared memory) of process ``pid`` in bytes, from
    ``/proc/<pid>/smaps_rollup``."""
    values = {"Pss:": 0, "Pss_Anon:": 0, "Pss_Shmem:": 0}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key = line.split(None, 1)[0]
            if key in values:
                values[key] = int(line.split()[1]) * 1024
    return values["Pss:"], values["Pss_Anon:"], values["Pss_Shmem:"]


def machine_shmem_bytes() -> int:
    """The machine's shared memory (tmpfs, memfd, SysV) from ``/proc/meminfo``."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


class ResourceMonitor:
    """Context manager sampling the process tree every ``interval_s`` seconds on a daemon thread.

    CPU seconds of descendants that exit inside the window are taken from the kernel's accounting of
    reaped children (``cpu_times().children_*``), so short-lived worker processes are counted in full.
    The sampling itself is not the loader's work and is left out of ``cpu_s``: reading a process's
    ``smaps_rollup`` with torch loaded is slow (~15-17 ms of CPU per read: a third of a core per process at a
    50 ms interval on 2 vCPUs). It is reported as ``monitor_cpu_s``.
    """

    def __init__(self, interval_s: float = 0.05) -> None:
        self._interval_s = interval_s
        self._me = psutil.Process()
        self._stop = threading.Event()
        self._last_cpu: dict[int, float] = {}  # live descendant pid -> last seen CPU seconds
        self._peak_pss = 0
        self._peak_anon = 0
        self._base_shm: tuple[int, int] | None = None
        self._monitor_cpu_s = 0.0  # sampling done in the caller's thread (enter, exit)

    def _timed_sample(self) -> None:
        t = time.thread_time()
        self._sample()
        self._monitor_cpu_s += time.thread_time() - t

    def _sample(self) -> None:
        total = anon = shm = 0
        machine_shm = machine_shmem_bytes()
        procs = [self._me, *self._me.children(recursive=True)]
        for p in procs:
            try:
                pss, pss_anon, pss_shm = _pss(p.pid)
                total += pss
                anon += pss_anon
                shm += pss_shm
                if p.pid != self._me.pid:
                    t = p.cpu_times()
                    self._last_cpu[p.pid] = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied, FileNotFoundError, ProcessLookupError):
                continue
        self._peak_pss = max(self._peak_pss, total)
        if self._base_shm is None:
            self._base_shm = (machine_shm, shm)
        unmapped = max(0, (machine_shm - self._base_shm[0]) - (shm - self._base_shm[1]))
        self._peak_anon = max(self._peak_anon, anon + shm + unmapped)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()
        self._thread_cpu_s = time.thread_time()  # all of this thread's CPU time is sampling

    def __enter__(self) -> ResourceMonitor:
        gc.collect()  # the first full collection after import before the window (README.md, Method)
        t = self._me.cpu_times()
        self._start_cpu = t.user + t.system + t.children_user + t.children_system
        pss, pss_anon, pss_shm = _pss(self._me.pid)
        self._baseline_pss, self._baseline_anon = pss, pss_anon + pss_shm
        self._timed_sample()
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
        self._timed_sample()
        self._stop.set()
        self._thread.join()
        monitor_cpu = self._monitor_cpu_s + self._thread_cpu_s
        wall = time.perf_counter() - self._t0
        t = self._me.cpu_times()
        own_and_reaped = t.user + t.system + t.children_user + t.children_system - self._start_cpu
        live = {p.pid for p in self._me.children(recursive=True)}
        live_cpu = sum(v - self._start_children.get(pid, 0.0) for pid, v in self._last_cpu.items() if pid in live)
        self.usage = Usage(wall, own_and_reaped + live_cpu - monitor_cpu, self._baseline_pss, self._peak_pss,
                           self._baseline_anon, self._peak_anon, monitor_cpu)


def python_step_seconds(iterations: int = 200_000) -> float:
    """Seconds a fixed pure-Python busy loop takes in the calling thread: a stand-in for the Python part of
    a training step. Compare it with and without a loader running to see the loader's GIL pressure."""
    start = time.perf_counter()
    x = 0
    for i in range(iterations):
        x += i * i % 7
    return time.perf_counter() - start
