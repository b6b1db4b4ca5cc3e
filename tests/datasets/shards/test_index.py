"""A forged ``index.json``, served by an HTTP server on 127.0.0.1 or local: the files it names resolve under the
index's own URL or directory (absolute names, ``..``, other hosts and schemes are refused, naming the entry),
and every read of the index or of a member table it names is bounded (``/dev/zero``, an endless body)."""

import json
import os

import pytest

from spdl_torch import DecodeError
from spdl_torch.datasets import TarShardDataset, write_shards
from spdl_torch.datasets.shards import RetryPolicy
from spdl_torch.datasets.shards import _index
from spdl_torch.datasets.shards._write import INDEX_FORMAT

from tests._utils.shards import make_samples
from tests._utils.range_server import RangeServer

pytest.importorskip("aiohttp")

FAST = RetryPolicy(attempts=2, timeout=5.0, backoff=0.001, max_backoff=0.01)


@pytest.fixture
def tree(tmp_path):
    """``served/`` (a shard and its table, what the server serves) and ``private/`` beside it (a shard of the
    client's own that no index may reach)."""
    served, private = tmp_path / "served", tmp_path / "private"
    [shard] = write_shards(make_samples(20), served, shard_size=1 << 20)
    [secret] = write_shards(make_samples(5, seed=9), private, shard_size=1 << 20)
    return served, shard, secret


def _write_index(directory, shards, name="forged.json"):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump({"format": INDEX_FORMAT, "shards": shards}, f)
    return path


def _entry(name, members=None, num_samples=20, num_bytes=None):
    e = {"name": name, "num_samples": num_samples}
    if members is not None:
        e["members"] = members
    if num_bytes is not None:
        e["num_bytes"] = num_bytes
    return e


def _forged_names(secret):
    rel = "../private/" + os.path.basename(secret)
    return [
        (secret, "absolute path"),  # the client's own file, by its absolute path
        (rel, "'..' component"),
        ("sub/../" + rel, "'..' component"),
        (rel.replace("..", "%2e%2E"), "'..' component"),  # percent-encoded (URL indexes only: a literal name locally)
        ("http://127.0.0.2:9/x.tar", "another scheme or host"),
        ("file:///etc/passwd", "another scheme or host"),
        ("//other.invalid/x.tar", "another scheme or host"),
    ]


def test_a_remote_index_cannot_name_files_outside_its_url(tree):
    served, shard, secret = tree
    with RangeServer(served) as srv:
        for i, (name, why) in enumerate(_forged_names(secret)):
            for field in ("name", "members"):
                entry = _entry(name) if field == "name" else _entry(os.path.basename(shard), members=name)
                index = _write_index(served, [_entry(os.path.basename(shard)), entry], f"forged{i}{field}.json")
                before = dict(srv.asked)
                with pytest.raises(ValueError, match=rf"forged{i}{field}\.json: shard entry 1: {field} .*{why}"):
                    TarShardDataset(srv.url(os.path.basename(index)), retry=FAST)
                assert set(srv.asked) - set(before) == {"/" + os.path.basename(index)}  # nothing else was read
        # members "/dev/zero": refused by name, before anything is read
        index = _write_index(served, [_entry(os.path.basename(shard), members="/dev/zero")], "zero.json")
        with pytest.raises(ValueError, match=r"shard entry 0: members '/dev/zero' is an absolute path"):
            TarShardDataset(srv.url("zero.json"), retry=FAST)
        # a name in a subdirectory of the index's URL is read, and equals the local read
        index = _write_index(served.parent, [_entry("served/" + os.path.basename(shard),
                                                    members="served/" + os.path.basename(shard) + ".members.json")])
    with RangeServer(served.parent) as srv:
        got = [o["__key__"] for o in TarShardDataset(srv.url("forged.json"), shuffle=False, retry=FAST)]
    assert got == [k for k, _ in make_samples(20)]
    assert [o["__key__"] for o in TarShardDataset(index, shuffle=False)] == got


def test_a_local_index_cannot_name_files_outside_its_directory(tree):
    served, shard, secret = tree
    for name, why in _forged_names(secret):
        if "%2e" in name:
            continue
        for field in ("name", "members"):
            entry = _entry(name) if field == "name" else _entry(os.path.basename(shard), members=name)
            index = _write_index(served, [entry])
            with pytest.raises(ValueError, match=rf"forged\.json: shard entry 0: {field} .*{why}"):
                TarShardDataset(index)
    for entry, what in (({"num_samples": 3}, "name None is not a non-empty string"),
                        (_entry(7), "name 7 is not a non-empty string"),
                        (_entry("a\0b"), "name .* contains a NUL"),
                        (_entry("x.tar", num_samples="3"), "num_samples '3' is not an integer"),
                        (_entry("x.tar", num_samples=-1), "num_samples -1 is not an integer"),
                        (_entry("x.tar", num_bytes=1.5), "num_bytes 1.5 is not an integer")):
        with pytest.raises(ValueError, match=rf"shard entry 0: {what}"):
            TarShardDataset(_write_index(served, [entry]))


def test_a_member_table_longer_than_its_shard_is_not_read_further(tree):
    served, shard, _ = tree
    size = os.path.getsize(shard)
    os.symlink("/dev/zero", served / "zero.members.json")  # inside the directory, endless
    index = _write_index(served, [_entry(os.path.basename(shard), members="zero.members.json", num_bytes=size)])
    ds = TarShardDataset(index)
    with pytest.raises(DecodeError, match=rf"zero\.members\.json is longer than {size + _index.TABLE_SLACK_BYTES} "
                                          r"bytes \(not read further\)"):
        list(ds)


def _endless(sent):
    """A route answering 200 with an endless body of spaces (stopped after 64 MiB, or when the client leaves)."""

    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        chunk = b" " * (1 << 16)
        try:
            for _ in range(1024):
                handler.wfile.write(chunk)
                sent[handler.path] = sent.get(handler.path, 0) + len(chunk)
        except OSError:
            pass
        handler.close_connection = True

    return answer


def test_endless_remote_index_and_table_bodies_are_bounded(tree, monkeypatch):
    served, shard, _ = tree
    size = os.path.getsize(shard)
    sent = {}
    _write_index(served, [_entry(os.path.basename(shard), members="endless.members.json", num_bytes=size)])
    routes = {"/endless.json": _endless(sent), "/endless.members.json": _endless(sent)}
    monkeypatch.setattr(_index, "MAX_JSON_BYTES", 2 << 20)
    with RangeServer(served, routes=routes) as srv:
        with pytest.warns(RuntimeWarning, match="ignores Range"):
            with pytest.raises(ValueError, match=rf"the index {srv.url('endless.json')} is longer than {2 << 20}"):
                TarShardDataset(srv.url("endless.json"), retry=FAST)
        ds = TarShardDataset(srv.url("forged.json"), retry=FAST)
        limit = size + _index.TABLE_SLACK_BYTES
        with pytest.raises(DecodeError, match=rf"endless\.members\.json is longer than {limit} bytes"):
            list(ds)
    # what the server wrote: what was read plus what the sockets buffer, far from the 64 MiB it would send
    assert sent["/endless.json"] < (2 << 20) + (16 << 20) and sent["/endless.members.json"] < limit + (16 << 20)


def test_a_member_table_entry_past_its_shard_is_refused_before_any_allocation(tree):
    served, shard, _ = tree
    table = json.load(open(shard + ".members.json"))
    table["samples"][3][3][0] = 1 << 40  # a member of 1 TiB in a shard of a few KB
    with open(served / "huge.members.json", "w") as f:
        json.dump(table, f)
    size = os.path.getsize(shard)
    _write_index(served, [_entry(os.path.basename(shard), members="huge.members.json", num_bytes=size)])
    with RangeServer(served) as srv:
        ds = TarShardDataset(srv.url("forged.json"), retry=FAST)
        with pytest.raises(DecodeError, match=rf"huge\.members\.json does not match the index: a member ends at "
                                              rf"byte \d+, past the shard's {size} bytes"):
            list(ds)
        assert not any(p.endswith(".tar") for p in srv.asked)  # refused before fetching anything of the shard


def test_a_remote_table_without_num_bytes_declaring_2_62_bytes_costs_no_memory(tree):
    """An index entry without ``num_bytes`` whose table gives sample 19's last member 2^62 bytes: the only
    sample rank 19 of 20 wants. The span's last byte is fetched before a buffer of its size is made: a
    DecodeError naming the shard, the sample and the member (it was a 2^62-byte allocation and a list of 2^40
    pieces, and the process was killed), counted under "skip"."""
    served, shard, _ = tree
    table = json.load(open(shard + ".members.json"))
    key = table["samples"][19][0]
    table["samples"][19][3][-1] = 1 << 62
    with open(served / "huge.members.json", "w") as f:
        json.dump(table, f)
    _write_index(served, [_entry(os.path.basename(shard), members="huge.members.json")])
    with RangeServer(served) as srv:
        ds = TarShardDataset(srv.url("forged.json"), retry=FAST, shuffle=False, rank=19, world_size=20)
        with pytest.raises(DecodeError, match=rf"{os.path.basename(shard)}: sample '{key}', member '{key}\.bin': "
                                              r"truncated member \(the shard ends before byte \d+, where the member "
                                              r"ends\)"):
            list(ds)
        ds = TarShardDataset(srv.url("forged.json"), retry=FAST, shuffle=False, rank=19, world_size=20,
                             on_error="skip")
        with pytest.warns(RuntimeWarning, match="truncated member"):
            assert list(ds) == []
        assert len(ds.skipped) == 1
        ds = TarShardDataset(srv.url("forged.json"), retry=FAST, shuffle=False, rank=0, world_size=2)
        assert [s["__key__"] for s in ds] == [k for k, _ in make_samples(20)[:10]]  # the rest is read as before


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
def test_a_member_table_row_out_of_order_is_a_decode_error(tree, remote):
    """A row whose last member is listed at the shard's start (before its first): the sample's span is from the
    lowest header to the highest end, so the members' headers tell the table does not match (it was a buffer
    of negative size: a RuntimeError naming no file)."""
    served, shard, _ = tree
    table = json.load(open(shard + ".members.json"))
    key, exts = table["samples"][4][:2]
    table["samples"][4][2][-1], table["samples"][4][3][-1] = 512, 8
    with open(served / "order.members.json", "w") as f:
        json.dump(table, f)
    _write_index(served, [_entry(os.path.basename(shard), members="order.members.json",
                                 num_bytes=os.path.getsize(shard))])
    pattern = rf"sample '{key}', member '{key}\.{exts[-1]}': the member table does not match the shard"
    with RangeServer(served) as srv:
        index = srv.url("forged.json") if remote else str(served / "forged.json")
        with pytest.raises(DecodeError, match=pattern):
            list(TarShardDataset(index, shuffle=False, retry=FAST))
