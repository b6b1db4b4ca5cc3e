"""Failure budgets, the error the consumer sees, and once-per-kind logging of tolerated failures."""

from __future__ import annotations

import logging
import reprlib
from typing import Any

__all__ = ["MIN_ITEMS_FOR_RATE", "Budget", "FailureTracker", "PipelineFailure", "validate_max_failures"]

_LG = logging.getLogger("spdl_torch.pipeline")

#: A rate budget (``max_failures`` a float in (0, 1)) is only evaluated once at least this many items
#: were processed by the stage (successes + failures), so that e.g. 1 failure out of the first 3 items
#: does not stop a pipeline allowed to drop 10 %. When the stage's input ends with fewer items
#: processed, the rate is evaluated once more, on whatever was processed (a small data set where most
#: items fail still raises).
MIN_ITEMS_FOR_RATE = 50

_repr = reprlib.Repr()
_repr.maxstring = 120
_repr.maxother = 120
_repr.maxlist = 8
_repr.maxtuple = 8
_repr.maxdict = 8


def short_repr(obj: Any) -> str:
    """``repr`` of ``obj``, truncated to about 120 characters (safe on objects whose repr raises)."""
    try:
        return _repr.repr(obj)
    except Exception:  # pragma: no cover - defensive
        return f"<{type(obj).__name__} object (repr failed)>"


class PipelineFailure(RuntimeError):
    """Raised in the consumer thread when a stage exceeded its failure budget (or the global one),
    when the source raised, or when the engine itself failed.

    The original exception is chained (``__cause__``), so the traceback printed by Python shows where
    the user function failed.

    Attributes:
        stage: name of the failing stage (``"source"`` for the source iterable).
        item: the input item that failed last (``None`` when not item-related).
    """

    def __init__(self, message: str, *, stage: str, item: Any = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.item = item


def validate_max_failures(value: int | float | None, what: str) -> None:
    """Checks a ``max_failures`` argument.

    Raises:
        TypeError: not ``None``, an ``int`` or a ``float`` (``bool`` is rejected).
        ValueError: a negative int, or a float outside the open interval (0, 1).
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what}: max_failures must be an int (count) or a float in (0, 1) (rate), got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what}: max_failures must be >= 0, got {value}")
    elif not 0.0 < value < 1.0:
        raise ValueError(f"{what}: a rate max_failures must be in the open interval (0, 1), got {value}")


class Budget:
    """A failure budget: a count (``int``: fail when failures > count) or a rate (``float`` in (0, 1):
    fail when failures / processed > rate, once processed >= :data:`MIN_ITEMS_FOR_RATE` or at the end
    of the stream). ``None`` means unlimited."""

    def __init__(self, limit: int | float | None) -> None:
        self.limit = limit

    def exceeded(self, failures: int, processed: int, *, final: bool = False) -> bool:
        limit = self.limit
        if limit is None or failures == 0:
            return False
        if isinstance(limit, int):
            return failures > limit
        if processed <= 0 or (processed < MIN_ITEMS_FOR_RATE and not final):
            return False
        return failures / processed > limit

    def describe(self) -> str:
        if isinstance(self.limit, float):
            return f"rate {self.limit:g} (evaluated after {MIN_ITEMS_FOR_RATE} items)"
        return f"count {self.limit}"


class FailureTracker:
    """Counts failures of one run, logs the first failure of each kind (stage + exception type) and
    decides whether a budget is exceeded. Only used from the scheduler thread."""

    def __init__(self, global_limit: int | float | None) -> None:
        self.global_budget = Budget(global_limit)
        self.total = 0
        self._logged: set[tuple[str, type]] = set()

    def record(self, stats: Any, budget: Budget, item: Any, exc: BaseException, source_count: int) -> PipelineFailure | None:
        """Records that ``item`` failed with ``exc`` in the stage whose counters are ``stats``.

        Returns:
            ``None`` when within budget (the item is dropped), else the error to raise in the consumer.
        """
        stats.failures += 1
        self.total += 1
        stats.last_exc = exc
        stats.last_failed_item = item
        processed = stats.count + stats.failures
        if budget.exceeded(stats.failures, processed):
            return self._error(stats.name, item, exc, f"stage budget {budget.describe()} exceeded "
                               f"({stats.failures} failed of {processed} processed)")
        if self.global_budget.exceeded(self.total, source_count):
            return self._error(stats.name, item, exc, f"pipeline budget {self.global_budget.describe()} exceeded "
                               f"({self.total} failures in all stages for {source_count} source items)")
        key = (stats.name, type(exc))
        if key not in self._logged:
            self._logged.add(key)
            _LG.warning(
                "Stage %r failed on item %s with %s: %s -- item dropped (failure %d, budget %s); further %s "
                "failures of this stage are counted in stats() but not logged.",
                stats.name, short_repr(item), type(exc).__name__, exc, stats.failures, budget.describe(),
                type(exc).__name__, exc_info=(type(exc), exc, exc.__traceback__),
            )
        return None

    def final_check(self, stats: Any, budget: Budget) -> PipelineFailure | None:
        """End-of-stream check of a rate budget on fewer than :data:`MIN_ITEMS_FOR_RATE` items."""
        processed = stats.count + stats.failures
        if stats.last_exc is not None and budget.exceeded(stats.failures, processed, final=True):
            return self._error(stats.name, stats.last_failed_item, stats.last_exc,
                               f"stage budget {budget.describe()} exceeded at end of input "
                               f"({stats.failures} failed of {processed} processed)")
        return None

    @staticmethod
    def _error(stage: str, item: Any, exc: BaseException, why: str) -> PipelineFailure:
        err = PipelineFailure(
            f"Stage {stage!r} failed on item {short_repr(item)}: {type(exc).__name__}: {exc} [{why}]",
            stage=stage, item=item)
        err.__cause__ = exc
        return err
