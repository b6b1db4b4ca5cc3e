"""Remote shards from a local HTTP server (a thread of this process, Range support) with latency, 503s, dropped
connections and short bodies: nothing lost, nothing duplicated; failures past the retry budget name the URL."""

import asyncio
import os

import pytest

from spdl_torch import DecodeError
from spdl_torch.datasets import TarShardDataset, write_shards
from spdl_torch.datasets.shards import HttpFetch, RetryPolicy

from tests._utils.shards import make_samples
from tests._utils.range_server import RangeServer

pytest.importorskip("aiohttp")

FAST = RetryPolicy(attempts=6, timeout=5.0, backoff=0.001, max_backoff=0.01)


def _keys(ds):
    return [(o["__key__"], bytes(o["bin"].numpy())) for o in ds]


def _expected(samples):
    return [(k, m["bin"]) for k, m in samples]


@pytest.mark.parametrize("faults", [
    dict(),
    pytest.param(dict(delay=0.02), marks=pytest.mark.slow),  # ~2.6 s
    dict(fail_every=10),
    dict(drop_every=7),
    dict(short_every=5),
])
def test_remote_shards_arrive_whole(shard_dir, faults):
    d, paths, samples = shard_dir
    with RangeServer(d, **faults) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=8192, read_ahead=3)
        assert ds.shards.counts == [int(c) for c in ds.shards.counts] and sum(ds.shards.counts) == len(samples)
        assert _keys(ds) == _expected(samples)
        if set(faults) - {"delay"}:
            assert srv.faults > 0  # the faults happened and were retried
        assert srv.requests > len(paths)  # ranges, not whole shards


def test_remote_without_index_counts_through_the_stream(shard_dir):
    d, paths, samples = shard_dir
    with RangeServer(d, fail_every=4) as srv:
        urls = [srv.url(os.path.basename(p)) for p in paths]
        ds = TarShardDataset(urls, shuffle=True, shuffle_buffer=9, retry=FAST, chunk_size=16384)
        got = list(ds)
    assert [o["__index__"] for o in got] == ds.global_order(0)
    assert sorted(o["__key__"] for o in got) == sorted(k for k, _ in samples)


def test_failure_past_the_retry_budget_names_the_url(shard_dir):
    d, paths, _ = shard_dir
    with RangeServer(d, fail_every=1) as srv:
        url = srv.url(os.path.basename(paths[0]))
        with pytest.raises(OSError, match=rf"{url}: bytes 0-\d+: failed after 3 attempts: FetchStatusError.*503"):
            TarShardDataset([url], retry=RetryPolicy(attempts=3, backoff=0.001))
        assert srv.requests == 3


def test_4xx_is_not_retried(shard_dir):
    d, _, _ = shard_dir
    with RangeServer(d) as srv:
        url = srv.url("missing.tar")
        with pytest.raises(OSError, match=rf"{url}.*HTTP 404"):
            TarShardDataset([url], retry=RetryPolicy(attempts=5, backoff=0.001))
        assert srv.requests == 1


def test_timeout_is_retried_then_raised(shard_dir):
    d, paths, _ = shard_dir
    with RangeServer(d, delay=0.3) as srv:
        url = srv.url(os.path.basename(paths[0]))
        with pytest.raises(OSError, match=rf"{url}.*failed after 2 attempts: TimeoutError"):
            TarShardDataset([url], retry=RetryPolicy(attempts=2, timeout=0.05, backoff=0.001))


def test_backoff_grows_exponentially_with_bounded_jitter():
    import random

    p = RetryPolicy(backoff=0.1, max_backoff=1.0, jitter=0.5)
    rng = random.Random(0)
    for k, base in ((1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)):
        delays = [p.delay(k, rng) for _ in range(200)]
        assert base * 0.5 <= min(delays) and max(delays) <= base * 1.5
        assert max(delays) - min(delays) > base * 0.5  # jitter spreads the retries
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


def test_a_custom_fetch_plugs_in(shard_dir):
    """Any ``async def fetch(url, start, stop) -> bytes``: here one that reads local files (as an S3 client
    would read objects), and fails each range once with ConnectionError."""
    d, paths, samples = shard_dir
    seen = set()
    calls = []

    async def fetch(url, start, stop):
        calls.append((url, start, stop))
        if (url, start) not in seen:
            seen.add((url, start))
            raise ConnectionError("simulated reset")
        await asyncio.sleep(0)
        path = os.path.join(d, url.rsplit("/", 1)[1])
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(stop - start)

    urls = [f"https://bucket.example/{os.path.basename(p)}" for p in paths]
    ds = TarShardDataset(urls, shuffle=False, fetch=fetch, retry=FAST, chunk_size=10_000)
    assert _keys(ds) == _expected(samples)
    assert calls and all(u.startswith("https://bucket.example/") for u, _, _ in calls)


def test_concurrency_is_bounded(shard_dir):
    d, paths, samples = shard_dir
    active, peak = 0, 0

    async def fetch(url, start, stop):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.002)
        finally:  # read-ahead beyond the end of a shard is cancelled
            active -= 1
        with open(os.path.join(d, url.rsplit("/", 1)[1]), "rb") as f:
            f.seek(start)
            return f.read(stop - start)

    urls = [f"http://h/{os.path.basename(p)}" for p in paths]
    ds = TarShardDataset(urls, shuffle=False, fetch=fetch, max_concurrency=2, read_ahead=8, chunk_size=2048)
    assert len(list(ds)) == len(samples)
    assert peak == 2


def test_cache_dir_is_bounded_and_serves_repeat_epochs(shard_dir, tmp_path):
    d, paths, samples = shard_dir
    total = sum(os.path.getsize(p) for p in paths)
    bound = total // 2
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, cache_dir=tmp_path / "cache",
                             cache_bytes=bound, chunk_size=16384)
        assert _keys(ds) == _expected(samples)
        cached = [n for n in os.listdir(tmp_path / "cache") if ".part" not in n]
        assert cached and ds.shards.cache.used_bytes() <= bound
        last = ds.shards.names[-1]
        assert ds.shards.cache.lookup(last) is not None  # the most recent shards stayed
        before = srv.requests
        ds2 = TarShardDataset([last], shuffle=False, retry=FAST, cache_dir=tmp_path / "cache", cache_bytes=bound)
        n_last = ds.shards.counts[-1]
        assert _keys(ds2) == _expected(samples[-n_last:])
        assert srv.requests == before  # counted and read from the cache: no request
    with pytest.raises(ValueError, match="cache_bytes"):
        TarShardDataset(os.path.join(d, "index.json"), cache_dir=tmp_path / "c2")


def test_http_fetch_reads_ranges_and_the_end(shard_dir):
    d, paths, _ = shard_dir
    data = open(paths[0], "rb").read()
    with RangeServer(d) as srv:
        url = srv.url(os.path.basename(paths[0]))
        fetch = HttpFetch()

        async def go():
            return [await fetch(url, 10, 110), await fetch(url, len(data) - 5, len(data) + 100),
                    await fetch(url, len(data) + 10, len(data) + 20)]

        async def go_into():
            outs = [bytearray(100), bytearray(105), bytearray(10)]
            ns = [await fetch.into(url, 10, 110, memoryview(outs[0])),
                  await fetch.into(url, len(data) - 5, len(data) + 100, memoryview(outs[1])),
                  await fetch.into(url, len(data) + 10, len(data) + 20, memoryview(outs[2]))]
            return ns, outs

        a, b, c = asyncio.run(go())
        ns, outs = asyncio.run(go_into())
    assert a == data[10:110] and b == data[-5:] and c == b""
    assert ns == [100, 5, 0] and outs[0] == data[10:110] and outs[1][:5] == data[-5:]


def test_a_custom_fetch_reads_shards_by_their_member_tables(shard_dir):
    """A fetch without an ``into`` method (any user client): the member-table path copies its bytes into the
    samples' buffers; each range fails once and is retried."""
    d, _, samples = shard_dir
    seen, calls = set(), []

    async def fetch(url, start, stop):
        calls.append((url, start, stop))
        if (url, start) not in seen:
            seen.add((url, start))
            raise ConnectionError("simulated reset")
        with open(os.path.join(d, url.rsplit("/", 1)[1]), "rb") as f:
            f.seek(start)
            return f.read(stop - start)

    ds = TarShardDataset("https://bucket.example/index.json", shuffle=True, shuffle_buffer=30, seed=5, fetch=fetch,
                         retry=FAST, chunk_size=5000, read_ahead=3)
    local = TarShardDataset(os.path.join(d, "index.json"), shuffle=True, shuffle_buffer=30, seed=5)
    assert type(ds.shards.cursor(0)).__name__ == "StreamTableCursor"
    assert _keys(ds) == _keys(local)
    assert sorted(k for k, _ in _keys(ds)) == sorted(k for k, _ in samples)
    assert any(u.endswith(".tar") and stop - start <= 5000 for u, start, stop in calls)  # pieces of chunk_size


def test_the_member_table_path_writes_bodies_into_the_sample_buffers(shard_dir, monkeypatch):
    d, _, samples = shard_dir
    used = {"call": 0, "into": 0}
    call, into = HttpFetch.__call__, HttpFetch.into

    async def counted_call(self, url, start, stop):
        used["call"] += url.endswith(".tar")
        return await call(self, url, start, stop)

    async def counted_into(self, url, start, stop, out):
        used["into"] += 1
        return await into(self, url, start, stop, out)

    monkeypatch.setattr(HttpFetch, "__call__", counted_call)
    monkeypatch.setattr(HttpFetch, "into", counted_into)
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=8192)
        assert _keys(ds) == _expected(samples)
    assert used["into"] > 0 and used["call"] == 0


def test_a_shard_shorter_than_its_index_reads_as_a_truncated_local_one(tmp_path):
    """The server's object ends before the index's num_bytes: the bytes there are are read, and the rest is
    the tar reader's truncated member (named, skipped like the same file on disk), not a bare OSError that
    lost the whole shard."""
    samples = make_samples(60)
    paths = write_shards(samples, tmp_path / "gz", shard_size=40_000, gzip=True)
    with open(paths[1], "r+b") as f:
        f.truncate(os.path.getsize(paths[1]) // 2)
    index = os.path.join(tmp_path / "gz", "index.json")
    with RangeServer(str(tmp_path)) as srv:
        url = srv.url("gz/index.json")
        local = TarShardDataset(index, shuffle=False, on_error="skip")
        remote = TarShardDataset(url, shuffle=False, on_error="skip")
        with pytest.warns(RuntimeWarning):
            want = [o["__key__"] for o in local]
        with pytest.warns(RuntimeWarning, match="shard-000001.tar.gz"):
            got = [o["__key__"] for o in remote]
        assert got == want and len(remote.skipped) == len(local.skipped) == len(samples) - len(want) > 0
        with pytest.raises(DecodeError, match=r"shard-000001\.tar\.gz: sample '.*', member '.*': truncated"):
            list(TarShardDataset(url, shuffle=False))


@pytest.mark.parametrize("gzip", [False, True])  # by the member tables / through tarfile
def test_a_server_that_ignores_range_serves_each_shard_once(tmp_path, gzip):
    samples = make_samples(240)
    paths = write_shards(samples, tmp_path, shard_size=40_000, gzip=gzip)
    total = sum(os.path.getsize(p) for p in paths)
    with RangeServer(str(tmp_path), ignore_range=True) as srv:
        with pytest.warns(RuntimeWarning, match=rf"127\.0\.0\.1:{srv.port} ignores Range requests") as seen:
            ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=8192, read_ahead=3)
            got = _keys(ds)
        shard_bytes = sum(n for p, n in srv.sent.items() if ".tar" in p and not p.endswith(".json"))
        shard_requests = {p: n for p, n in srv.asked.items() if ".tar" in p and not p.endswith(".json")}
    assert got == _expected(samples)
    assert len([w for w in seen if "ignores Range" in str(w.message)]) == 1  # one warning for the server
    assert shard_bytes <= 1.1 * total, (shard_bytes, total)  # each shard once, not once per range
    assert shard_requests == {"/" + os.path.basename(p): 1 for p in paths}


def test_unshuffled_remote_reads_coalesce_samples_into_one_range_per_block(shard_dir):
    d, paths, samples = shard_dir
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, shuffle_buffer=100, retry=FAST)
        got = _keys(ds)
        shard_requests = sum(n for p, n in srv.asked.items() if p.endswith(".tar"))
    assert got == _expected(samples)
    blocks = -(-len(samples) // 100)
    assert shard_requests <= blocks + len(paths) - 1  # one per (block, shard) stretch, not one per sample


def _forged_206(data, shift=0, cut=0, header=True):
    """A route answering a range request with 206 and the asked bytes, announced (``Content-Range``) as
    starting ``shift`` bytes later and ``cut`` bytes shorter."""

    def answer(handler):
        a, b = (int(v) for v in handler.headers["Range"][len("bytes="):].split("-"))
        body = data[a:min(b + 1, len(data)) - cut]
        handler.send_response(206)
        handler.send_header("Content-Length", str(len(body)))
        if header:
            handler.send_header("Content-Range", f"bytes {a + shift}-{a + shift + len(body) - 1}/{len(data)}")
        handler.end_headers()
        handler.wfile.write(body)

    return answer


@pytest.mark.parametrize("forged", [dict(shift=5), dict(cut=10), dict(header=False)])
def test_a_206_for_another_range_is_an_error_naming_the_url_and_range(shard_dir, forged):
    d, paths, _ = shard_dir
    data = open(paths[0], "rb").read()
    with RangeServer(d, routes={"/forged.tar": _forged_206(data, **forged)}) as srv:
        url = srv.url("forged.tar")
        with pytest.raises(ConnectionError, match=rf"{url}: a 206 answer .* to a request for bytes 10-109: "
                                                  "another range than the one asked for"):
            asyncio.run(HttpFetch()(url, 10, 110))
        with pytest.raises(OSError, match=rf"{url}: bytes 0-\d+: failed after 2 attempts: ConnectionError: "
                                          ".*another range"):
            TarShardDataset([url], retry=RetryPolicy(attempts=2, backoff=0.001))
        assert srv.asked["/forged.tar"] == 3  # retried like other transient errors, then raised


def test_shuffled_reads_from_a_server_that_ignores_range_equal_the_local_read(shard_dir):
    """Random access (shuffled blocks, two loader threads on the same shards): each request is served from a held
    answer at or before its start, or a new one; the samples are those of the local read, in its order."""
    import spdl_torch

    d, paths, samples = shard_dir
    local = TarShardDataset(os.path.join(d, "index.json"), shuffle=True, shuffle_buffer=30, seed=2)
    want = [(o["__index__"], o["__key__"], bytes(o["bin"].numpy()))
            for o in spdl_torch.DataLoader(local, batch_size=None, num_workers=2)]
    with RangeServer(d, ignore_range=True) as srv:
        with pytest.warns(RuntimeWarning, match="ignores Range"):
            ds = TarShardDataset(srv.url("index.json"), shuffle=True, shuffle_buffer=30, seed=2, retry=FAST,
                                 chunk_size=4096, max_concurrency=4)
            loader = spdl_torch.DataLoader(ds, batch_size=None, num_workers=2)
            got = [(o["__index__"], o["__key__"], bytes(o["bin"].numpy())) for o in loader]
    assert got == want and sorted(o[0] for o in got) == list(range(len(samples)))


@pytest.mark.slow  # ~3 s: forked worker processes
def test_forked_worker_processes_read_http_shards(shard_dir):
    """torch's DataLoader forks its workers after the parent read the index over HTTP: the parent's fetch loop
    thread is not in the child, which starts its own (before, every read of the child waited forever)."""
    import torch

    d, _, samples = shard_dir
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                                             timeout=60)
        assert sorted(o["__key__"] for o in loader) == sorted(k for k, _ in samples)
