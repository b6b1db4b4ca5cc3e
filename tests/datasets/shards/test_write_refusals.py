"""``write_shards`` refuses what would write outside ``out_dir`` or what it could not read back (each a
ValueError naming the sample or the prefix, nothing left behind), and writes long and non-ASCII keys as tarfile
reads them."""

import json
import os
import tarfile

import pytest

from spdl_torch.datasets import TarShardDataset, write_shards

from tests._utils.shards import index_of, make_samples


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.mark.parametrize("prefix", ["../escaped", "/tmp/abs", "sub/dir", "a\\b", "..", "", "nul\0"])
def test_a_prefix_that_is_not_a_file_name_is_refused(tmp_path, prefix):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"write_shards: prefix .* must be a file name"):
        write_shards(make_samples(3), out, prefix=prefix)
    assert _files(tmp_path) == []  # nothing written, in out_dir or beside it


@pytest.mark.parametrize("key, match", [
    ("a\0b", "'a\\\\x00b' must be a relative path"),
    ("../up", "'../up' must be a relative path"),
    ("d/../up", "'d/../up' must be a relative path"),
    ("/abs/k", "'/abs/k' must be a relative path"),
    ("d//k", "'d//k' must be a relative path"),
    ("./k", "'./k' must be a relative path"),
    ("d/", "'d/' must be a relative path"),
])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_hostile_key_is_refused_and_leaves_no_partial_shard(tmp_path, key, match, gz):
    samples = make_samples(5) + [(key, {"txt": b"x"})] + make_samples(3, seed=1)
    with pytest.raises(ValueError, match=match):
        write_shards(samples, tmp_path / "out", shard_size=10240, gzip=gz)  # 5 good samples: 2 shards started
    assert _files(tmp_path) == []


def test_a_sample_without_members_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"write_shards: sample 'd0/s00001' has no member"):
        write_shards([("d0/s00000", {"txt": b"a"}), ("d0/s00001", {})], tmp_path / "out")
    assert _files(tmp_path) == []


@pytest.mark.parametrize("ext", ["a\0b", "x/y", ""])
def test_a_hostile_extension_is_refused_naming_the_sample(tmp_path, ext):
    with pytest.raises(ValueError, match=r"write_shards: sample 'k' has a member with an empty extension or one "
                                         r"with a '/' or NUL"):
        write_shards([("k", {ext: b"1"})], tmp_path / "out")
    assert _files(tmp_path) == []


def test_an_error_in_the_source_leaves_nothing_behind_and_an_earlier_dataset_intact(tmp_path):
    out = tmp_path / "out"
    first = write_shards(make_samples(20), out, shard_size=10240)
    before = {f: open(out / f, "rb").read() for f in _files(out)}

    def source():
        yield from make_samples(30, seed=5)
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="the source failed"):
        write_shards(source(), out, shard_size=10240)
    assert {f: open(out / f, "rb").read() for f in _files(out)} == before
    assert [s["__key__"] for s in TarShardDataset(index_of(out), shuffle=False)] == [k for k, _ in make_samples(20)]
    assert len(first) > 1


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_long_and_non_ascii_keys_round_trip_as_tarfile_reads_them(tmp_path, gz):
    """A key under 100 characters but over 100 UTF-8 bytes, one over 255 bytes, and short ASCII ones in the
    same shard (the first sample's key is short: each member gets the header its own name needs)."""
    keys = ["short", "é" * 60, "d/" + "x" * 300, "ünï/cödé", "z" * 97]
    samples = [(k, {"txt": f"v{i}".encode(), "bin": bytes([i]) * (100 * i)}) for i, k in enumerate(keys)]
    paths = write_shards(samples, tmp_path, gzip=gz)
    assert len(paths) == 1
    with tarfile.open(paths[0]) as tf:  # the reference
        ref = [(m.name, tf.extractfile(m).read()) for m in tf]
    assert ref == [(f"{k}.{e}", v) for k, m in samples for e, v in m.items()]
    index = json.load(open(index_of(tmp_path)))
    assert index["shards"][0]["num_samples"] == len(keys)
    assert index["shards"][0]["num_bytes"] == os.path.getsize(paths[0])
    ds = TarShardDataset(index_of(tmp_path), shuffle=False, decoders={"txt": None})  # the raw txt member
    assert all(t is not None for t in ds.shards.tables) != gz  # plain: read by its member table
    got = [(s["__key__"], bytes(s["txt"].numpy()), bytes(s["bin"].numpy())) for s in ds]
    assert got == [(k, m["txt"], m["bin"]) for k, m in samples]
    assert [s["__key__"] for s in TarShardDataset(paths, shuffle=False)] == keys  # and through tarfile


def test_shard_size_counts_the_pax_headers_of_long_names(tmp_path):
    samples = [(f"{'k' * 200}{i:03d}", {"bin": bytes(1000)}) for i in range(60)]
    paths = write_shards(samples, tmp_path, shard_size=20480)
    assert len(paths) > 1 and all(os.path.getsize(p) <= 20480 for p in paths)
    assert [s["__key__"] for s in TarShardDataset(index_of(tmp_path), shuffle=False)] == [k for k, _ in samples]
