"""Failure budgets of spdl_torch.pipeline: counts, rates, global budget, messages, chaining, logging."""

import logging
import traceback

import pytest

from spdl_torch.pipeline import PipelineBuilder, PipelineFailure
from spdl_torch.pipeline._failures import MIN_ITEMS_FOR_RATE


def failing_on(bad, exc=ValueError):
    def check_item(x):
        if x in bad:
            raise exc(f"bad item {x}")
        return x

    return check_item


def test_default_budget_raises_on_first_failure_with_stage_item_and_cause():
    p = PipelineBuilder().add_source(range(10)).pipe(failing_on({3}), name="checker").build()
    got = []
    with pytest.raises(PipelineFailure) as info:
        for x in p:
            got.append(x)
    assert got == [0, 1, 2]  # items finished before the failure are delivered first
    err = info.value
    assert err.stage == "checker" and err.item == 3
    assert "'checker'" in str(err) and "item 3" in str(err) and "ValueError: bad item 3" in str(err)
    assert isinstance(err.__cause__, ValueError)
    tb = "".join(traceback.format_exception(err.__cause__))
    assert "check_item" in tb  # the original traceback, from the pool thread, is kept
    assert p.stats()["state"] == "failed"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_count_budget(concurrency, caplog):
    bad = {1, 4, 7}
    ok = PipelineBuilder().add_source(range(10)).pipe(failing_on(bad), concurrency=concurrency, max_failures=3).build()
    with caplog.at_level(logging.WARNING, logger="spdl_torch.pipeline"):
        assert list(ok) == [x for x in range(10) if x not in bad]
    st = ok.stats()["stages"][1]
    assert (st["count"], st["failures"]) == (7, 3)
    logged = [r for r in caplog.records if "failed on item" in r.getMessage()]
    assert len(logged) == 1  # once per (stage, exception type)
    assert logged[0].exc_info is not None

    over = PipelineBuilder().add_source(range(10)).pipe(failing_on(bad), max_failures=2).build()
    with pytest.raises(PipelineFailure, match=r"item 7") as info:
        list(over)
    assert info.value.item == 7 and isinstance(info.value.__cause__, ValueError)


def test_logged_once_per_kind(caplog):
    def fn(x):
        if x % 2:
            raise KeyError(x)
        if x % 3 == 0:
            raise ValueError(x)
        return x

    p = PipelineBuilder().add_source(range(30)).pipe(fn, max_failures=100).build()
    with caplog.at_level(logging.WARNING, logger="spdl_torch.pipeline"):
        list(p)
    kinds = sorted(r.exc_info[0].__name__ for r in caplog.records if "failed on item" in r.getMessage())
    assert kinds == ["KeyError", "ValueError"]


def test_rate_budget():
    n = 4 * MIN_ITEMS_FOR_RATE
    # 5 % failures: within a 10 % budget
    bad = set(range(0, n, 20))
    p = PipelineBuilder().add_source(range(n)).pipe(failing_on(bad), concurrency=2, max_failures=0.1).build()
    assert sorted(p) == [x for x in range(n) if x not in bad]
    assert p.stats()["stages"][1]["failures"] == len(bad)

    # 25 % failures: raises, but only once MIN_ITEMS_FOR_RATE items were processed
    bad = set(range(0, n, 4))
    p = PipelineBuilder().add_source(range(n)).pipe(failing_on(bad), max_failures=0.1).build()
    with pytest.raises(PipelineFailure, match="rate") as info:
        list(p)
    assert info.value.item >= MIN_ITEMS_FOR_RATE - 1
    assert isinstance(info.value.__cause__, ValueError)


def test_rate_budget_checked_at_end_of_small_input():
    p = PipelineBuilder().add_source(range(10)).pipe(failing_on({2, 5}), max_failures=0.1).build()
    with pytest.raises(PipelineFailure, match="end of input"):
        list(p)
    p = PipelineBuilder().add_source(range(10)).pipe(failing_on({2}), max_failures=0.5).build()
    assert list(p) == [x for x in range(10) if x != 2]


def test_global_budget_counts_all_stages():
    p = (PipelineBuilder().add_source(range(20))
         .pipe(failing_on({1, 2}), name="a")
         .pipe(failing_on({5, 6}), name="b")
         .build(max_failures=3))  # each stage within 3, total 4 > 3
    with pytest.raises(PipelineFailure, match="pipeline budget") as info:
        list(p)
    assert info.value.stage == "b" and info.value.item == 6


def test_stage_budget_overrides_global():
    p = (PipelineBuilder().add_source(range(20))
         .pipe(failing_on({1, 2, 3}), name="a", max_failures=5)
         .build(max_failures=None))
    assert len(list(p)) == 17


def test_generator_and_async_failures():
    def gen(x):
        yield x
        if x == 2:
            raise RuntimeError("gen broke")
        yield x

    async def afn(x):
        if x == 4:
            raise OSError("net down")
        return x

    p = PipelineBuilder().add_source(range(6)).pipe(gen, max_failures=1).pipe(afn, concurrency=2, max_failures=0).build()
    with pytest.raises(PipelineFailure) as info:
        list(p)
    assert info.value.stage == "afn" and isinstance(info.value.__cause__, OSError)
    p = PipelineBuilder().add_source(range(4)).pipe(gen, max_failures=1).build()
    assert list(p) == [0, 0, 1, 1, 2, 3, 3]  # outputs before the failure are kept


def test_source_failure():
    def src():
        yield 1
        raise ZeroDivisionError("src")

    p = PipelineBuilder().add_source(src()).pipe(lambda x: x).build(max_failures=10)
    with pytest.raises(PipelineFailure) as info:
        list(p)
    assert info.value.stage == "source" and isinstance(info.value.__cause__, ZeroDivisionError)


def test_invalid_budgets():
    b = PipelineBuilder().add_source([1])
    for bad in (-1, 1.0, 0.0, 1.5):
        with pytest.raises(ValueError):
            b.pipe(lambda x: x, max_failures=bad)
    with pytest.raises(TypeError):
        b.pipe(lambda x: x, max_failures="1")
