"""Remote shards read by their member table (the index's ``members`` entry): only the bytes of the samples a
worker asks for are fetched, no tar header is parsed, and a shard or table that does not match is an error
naming the shard, the key and the member."""

import json
import os
import shutil

import pytest

import spdl_torch
from spdl_torch.datasets import TarShardDataset
from spdl_torch.datasets.shards import RetryPolicy
from spdl_torch.datasets.shards._table import StreamTableCursor
from spdl_torch import DecodeError

from tests._utils.range_server import RangeServer

pytest.importorskip("aiohttp")

FAST = RetryPolicy(attempts=4, timeout=5.0, backoff=0.001, max_backoff=0.01)


def _dicts(ds):
    return [(o["__key__"], o["__index__"], bytes(o["bin"].numpy()), o["cls"]) for o in ds]


@pytest.mark.parametrize("shuffle", [False, True])
def test_remote_table_equals_local(shard_dir, shuffle):
    d, paths, samples = shard_dir
    local = TarShardDataset(os.path.join(d, "index.json"), shuffle=shuffle, shuffle_buffer=17, seed=4)
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=shuffle, shuffle_buffer=17, seed=4, retry=FAST,
                             chunk_size=4096)
        assert isinstance(ds.shards.cursor(0), StreamTableCursor)
        assert _dicts(ds) == _dicts(local)
        if not shuffle:
            assert [k for k, *_ in _dicts(ds)] == [k for k, _ in samples]


def test_two_workers_fetch_each_byte_about_once(tmp_path):
    # One shard, two loader threads: each reads its half of the shard. Through tarfile the second thread would
    # stream the first half too (a stream cannot skip), about 1.5x the shard's bytes in all.
    from tests._utils.shards import make_samples

    samples = make_samples(400, seed=3)
    d = tmp_path / "one"
    [shard] = spdl_torch.datasets.write_shards(samples, d, shard_size=1 << 30)
    size = os.path.getsize(shard)
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=8192)
        loader = spdl_torch.DataLoader(ds, batch_size=None, num_workers=2)
        got = sorted(o["__key__"] for o in loader)
        sent = srv.bytes_sent
    assert got == sorted(k for k, _ in samples)
    index_and_tables = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".json"))
    assert sent - index_and_tables <= size * 1.05, (sent, size)


def test_a_long_unwanted_run_is_skipped_by_a_new_range(tmp_path):
    from tests._utils.shards import make_samples

    samples = make_samples(400, seed=5)
    d = tmp_path / "one"
    [shard] = spdl_torch.datasets.write_shards(samples, d, shard_size=1 << 30)
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=4096, read_ahead=2)
        cursor = ds.shards.cursor(0)
        keep = {0, 1, 399}
        before, requests = srv.bytes_sent, srv.requests
        got = [s for s in cursor.read(0, 400, want=keep.__contains__) if s.members is not None]
        cursor.close()
        sent, requests = srv.bytes_sent - before, srv.requests - requests
    assert [s.index for s in got] == [0, 1, 399]
    assert [bytes(s.members["bin"].numpy()) for s in got] == [samples[i][1]["bin"] for i in (0, 1, 399)]
    assert sent < os.path.getsize(shard) / 10, (sent, os.path.getsize(shard))  # not read through
    assert requests >= 2  # a second range for the last sample


def test_truncated_remote_shard_names_shard_key_and_member(shard_dir, tmp_path):
    d, paths, samples = shard_dir
    copy = tmp_path / "cut"
    shutil.copytree(d, copy)
    victim = copy / os.path.basename(paths[1])
    raw = victim.read_bytes()
    victim.write_bytes(raw[: len(raw) // 2])
    with RangeServer(copy) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=4096)
        with pytest.raises(DecodeError, match=rf"{srv.url(victim.name)}: sample '.+', member '.+': truncated member"):
            list(ds)
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST, chunk_size=4096, on_error="skip")
        with pytest.warns(RuntimeWarning, match="truncated member"):
            got = [o["__key__"] for o in ds]
    lost = set(k for k, _ in samples) - set(got)
    assert lost and len(got) == len(set(got))  # the damaged shard's tail lost, nothing duplicated
    assert all(k in {k2 for k2, _ in samples} for k in got)


def test_a_table_that_does_not_match_its_remote_shard_is_an_error(shard_dir, tmp_path):
    d, paths, _ = shard_dir
    copy = tmp_path / "bad"
    shutil.copytree(d, copy)
    table = copy / (os.path.basename(paths[0]) + ".members.json")
    doc = json.loads(table.read_text())
    doc["samples"][3][2] = [o + 512 for o in doc["samples"][3][2]]  # sample 3's offsets shifted by a header
    table.write_text(json.dumps(doc))
    with RangeServer(copy) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, retry=FAST)
        with pytest.raises(DecodeError, match="the member table does not match the shard"):
            list(ds)


def test_the_next_block_is_read_while_this_one_is_consumed(shard_dir, monkeypatch):
    import threading

    import spdl_torch.datasets.shards._stream as stream

    d, _, samples = shard_dir
    started = {}
    real = stream._read_block

    def spy(layout, shards, k, needed, cursors, on_error):
        started.setdefault(k, threading.Event()).set()
        return real(layout, shards, k, needed, cursors, on_error)

    monkeypatch.setattr(stream, "_read_block", spy)
    with RangeServer(d) as srv:
        ds = TarShardDataset(srv.url("index.json"), shuffle=True, shuffle_buffer=20, seed=1, retry=FAST)
        it = iter(ds)
        first = next(it)  # block 0 read; block 1 submitted before block 0's first sample is handed out
        assert started.setdefault(1, threading.Event()).wait(10)
        assert 2 not in started  # only one block ahead
        rest = list(it)
    assert [o["__index__"] for o in [first] + rest] == ds.global_order(0)
    assert sorted(o["__key__"] for o in [first] + rest) == sorted(k for k, _ in samples)
