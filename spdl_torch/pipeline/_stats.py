"""Per-stage counters and their summary (:meth:`Pipeline.stats`), and a text table for logging."""

from __future__ import annotations

import collections
from typing import Any

from ._queues import QueueStats

__all__ = ["StageStats", "format_stats"]

#: Latency percentiles are computed on the most recent ``LATENCY_WINDOW`` items of each stage.
LATENCY_WINDOW = 10_000


def _percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    idx = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[idx]


class StageStats:
    """Counters of one stage, updated on the scheduler thread only.

    ``count`` is the number of inputs processed successfully, ``failures`` the number that raised,
    ``outputs`` the number of items put downstream (differs from ``count`` for generators,
    ``aggregate`` and ``disaggregate``). ``busy_s`` is the sum of the latencies (seconds spent in the
    user function, excluding time blocked on a full output queue).
    """

    def __init__(self, name: str, kind: str, concurrency: int) -> None:
        self.name = name
        self.kind = kind
        self.concurrency = concurrency
        self.count = 0
        self.failures = 0
        self.outputs = 0
        self.busy_s = 0.0
        self.latencies: collections.deque[float] = collections.deque(maxlen=LATENCY_WINDOW)
        self.last_exc: BaseException | None = None
        self.last_failed_item: Any = None
        self.queue: QueueStats | None = None  # the stage's output queue

    def add_latency(self, seconds: float) -> None:
        self.latencies.append(seconds)
        self.busy_s += seconds

    def as_dict(self, elapsed_s: float) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "name": self.name,
            "kind": self.kind,
            "concurrency": self.concurrency,
            "count": self.count,
            "failures": self.failures,
            "outputs": self.outputs,
            "items_per_s": self.count / elapsed_s if elapsed_s > 0 else 0.0,
            "latency_p50_s": _percentile(lat, 0.50),
            "latency_p90_s": _percentile(lat, 0.90),
            "latency_p99_s": _percentile(lat, 0.99),
            # fraction of the stage's concurrency slots spent in the user function: close to 1 means
            # this stage is the bottleneck (give it more concurrency / threads)
            "utilization": self.busy_s / (elapsed_s * self.concurrency) if elapsed_s > 0 else 0.0,
            "queue": self.queue.as_dict() if self.queue is not None else None,
        }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) < 0.01:
            return f"{v * 1e3:.3f}ms"
        return f"{v:.3g}"
    return str(v)


def format_stats(stats: dict[str, Any]) -> str:
    """Renders the dict returned by :meth:`Pipeline.stats` as a fixed-width table (one row per stage)."""
    cols = ["stage", "kind", "conc", "count", "fail", "out", "items/s", "p50", "p90", "p99", "util",
            "q_mean", "q_max", "q_size", "put_wait_s", "get_wait_s"]
    rows = []
    for s in stats["stages"]:
        q = s["queue"] or {}
        rows.append([s["name"], s["kind"], s["concurrency"], s["count"], s["failures"], s["outputs"],
                     s["items_per_s"], s["latency_p50_s"], s["latency_p90_s"], s["latency_p99_s"],
                     s["utilization"], q.get("occupancy_mean"), q.get("occupancy_max"), q.get("size"),
                     q.get("producer_wait_s"), q.get("consumer_wait_s")])
    cells = [cols] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = [f"pipeline {stats['state']} after {stats['elapsed_s']:.2f}s, {stats['consumed']} items consumed, "
             f"{stats['failures']} failures"]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
