"""Hostile and odd tar shards: forged member sizes (plain, gzip, streamed; past the archive, past any file offset,
negative), metadata members, sparse, link, directory, FIFO and device members, and an index that counts fewer or
more samples than a shard holds. Each shard is built in the test."""

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import textwrap
import threading
import warnings

import pytest

from spdl_torch import DecodeError
from spdl_torch.datasets import TarShardDataset, write_shards
from spdl_torch.datasets.shards._tar import ShardCursor, count_samples

from tests._utils.modules import load_file
from tests._utils.shards import index_of, make_samples
from tests._utils.tars import header, member, pax_member, write_shard
from tests._utils.range_server import RangeServer

GIB = 1 << 30
TIB = 1 << 40
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _good_then_forged(declared: int) -> bytes:
    """Sample s0 (two honest members), then sample s1 whose .bin header declares ``declared`` bytes with only
    1500 bytes of data after it (about 3 KB in all)."""
    return (member("s0.cls", b"3") + member("s0.bin", b"x" * 100)
            + member("s1.bin", b"\x07" * 1500, declared=declared))


def _stream_opener(data: bytes):
    return lambda: (io.BufferedReader(_Unseekable(data)), False)


class _Unseekable(io.RawIOBase):
    """A read-only stream that cannot seek (as a remote shard's)."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._f.readinto(b)


_MEMORY_PROBE = textwrap.dedent("""
    import json, os, resource, sys, warnings
    sys.path.insert(0, {root!r})
    from spdl_torch.datasets import TarShardDataset
    from tests._utils.range_server import RangeServer

    def epoch(index):
        ds = TarShardDataset(index, shuffle=False, on_error="skip")
        with warnings.catch_warnings(record=True):
            return [s["__key__"] for s in ds], ds.skipped

    out = {{}}
    for mode, index in zip(sys.argv[1::2], sys.argv[2::2]):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        keys, skipped = [], []
        for _ in range(3):
            if mode == "stream":
                with RangeServer(os.path.dirname(index)) as srv:
                    k, s = epoch(srv.url("index.json"))
            else:
                k, s = epoch(index)
            keys, skipped = k, skipped + s
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
        out[mode] = {{"grown_mb": grown / 1024, "keys": keys, "skipped": skipped}}
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_a_forged_2gib_member_costs_no_memory(tmp_path):
    """The header declares 2 GiB and 1500 bytes follow (plain, gzip, streamed from a local HTTP server): the
    read fails as truncated, with the peak memory (ru_maxrss, in a fresh process) grown by under 100 MB over
    three attempts each (allocating the declared size grew it by 2 GB)."""
    args = []
    for mode in ("plain", "gzip", "stream"):
        d = tmp_path / mode
        d.mkdir()
        args += [mode, write_shard(d / ("s.tar.gz" if mode == "gzip" else "s.tar"), _good_then_forged(2 * GIB), 2,
                                   gz=mode == "gzip")]
    probe = tmp_path / "probe.py"
    probe.write_text(_MEMORY_PROBE.format(root=ROOT))
    run = subprocess.run([sys.executable, str(probe), *args], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert list(result) == ["plain", "gzip", "stream"]
    for mode, got in result.items():
        assert got["keys"] == ["s0"], mode
        assert len(got["skipped"]) == 3 and all("sample 's1', member 's1.bin': truncated member" in m
                                                for m in got["skipped"]), (mode, got)
        assert got["grown_mb"] < 100, (mode, got)


# 1 TiB; 2^62 (past ext4's largest file: a seek there was a bare OSError EINVAL); 2^63 and the largest base-256
# size (past any file offset: a seek there was an OverflowError-like ValueError, plain or gzip)
HUGE = [TIB, 1 << 62, 1 << 63, (1 << 88) - 1]
HUGE_IDS = ["1tib", "2^62", "2^63", "2^88-1"]


@pytest.mark.parametrize("declared", HUGE, ids=HUGE_IDS)
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_forged_huge_member_is_a_decode_error_naming_shard_sample_member(tmp_path, gz, declared):
    name = "s.tar.gz" if gz else "s.tar"
    index = write_shard(tmp_path / name, _good_then_forged(declared), 2, gz=gz)
    with pytest.raises(DecodeError, match=rf"{name}: sample 's1', member 's1.bin': truncated member") as e:
        list(TarShardDataset(index, shuffle=False))
    assert e.value.path.endswith(name)
    ds = TarShardDataset(index, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match=rf"{name}: sample 's1'"):
        out = list(ds)
    assert [(s["__key__"], s["cls"], bytes(s["bin"].numpy())) for s in out] == [("s0", 3, b"x" * 100)]
    assert len(ds.skipped) == 1 and "s1.bin" in ds.skipped[0]


@pytest.mark.parametrize("declared", HUGE, ids=HUGE_IDS)
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_forged_huge_member_without_an_index_is_a_decode_error_when_counting(tmp_path, gz, declared):
    """Without an index the shard's headers are read to count its samples: the forged member is a DecodeError
    naming the shard, the sample and the member (never an OSError or ValueError of the seek past it)."""
    name = "s.tar.gz" if gz else "s.tar"
    p = tmp_path / name
    write_shard(p, _good_then_forged(declared), 2, gz=gz)
    with pytest.raises(DecodeError, match=rf"{name}: sample 's1', member 's1\.bin': truncated") as e:
        TarShardDataset([p])
    assert e.value.path == str(p)


@pytest.mark.parametrize("declared", HUGE, ids=HUGE_IDS)
def test_a_forged_huge_member_not_wanted_keeps_the_samples_before_it(tmp_path, declared):
    """Rank 0 of 2 wants s0 only: the forged s1 is skipped over, not read. s0 is delivered, and the forged
    member is a counted DecodeError under "skip" (a seek past it was a bare OSError naming no file)."""
    index = write_shard(tmp_path / "s.tar", _good_then_forged(declared) + member("s2.cls", b"5"), 3)
    ds = TarShardDataset(index, shuffle=False, rank=0, world_size=3, on_error="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [s["__key__"] for s in ds] == ["s0"]
    assert not caught
    ds = TarShardDataset(index, shuffle=False, rank=2, world_size=3, on_error="skip")
    with pytest.warns(RuntimeWarning, match=r"s\.tar: sample 's1', member 's1\.bin': truncated member"):
        assert [s["__key__"] for s in ds] == []
    assert len(ds.skipped) == 1


def _read_guarded(fn):
    """``fn()`` on a thread, waited for at most 60 s: a tar reader stepping over the same header forever fails
    the test instead of hanging it. Returns ``fn``'s exception (or None)."""
    out = []

    def run():
        try:
            fn()
            out.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert out, "the reader did not return: it loops over a header"
    return out[0]


@pytest.mark.parametrize("size", [-1, -512, -1536], ids=["-1", "-512", "-1536"])
@pytest.mark.parametrize("where", ["header", "pax"])
def test_a_negative_member_size_is_a_decode_error(tmp_path, size, where):
    """A negative size, in the header's base-256 form or a pax record: tarfile takes it and steps back to the same
    header (or an earlier one) forever; here it is a DecodeError naming the shard and the header."""
    forged = header("s1.bin", size) if where == "header" else pax_member({"size": str(size)}) + header("s1.bin", 0)
    p = tmp_path / "neg.tar"
    p.write_bytes(member("s0.cls", b"3") + member("s0.bin", b"x" * 100) + forged + b"\x07" * 1024)
    for stream in (False, True):
        opener = _stream_opener(p.read_bytes()) if stream else (lambda: (open(p, "rb"), True))
        error = _read_guarded(lambda: count_samples("neg.tar", opener))
        assert isinstance(error, DecodeError)
        assert re.search(rf"neg\.tar: .*bad tar header at byte \d+ \(member 's1\.bin'\): a negative size "
                         rf"\({size} bytes\)", str(error)), str(error)
    with pytest.raises(DecodeError, match="a negative size"):
        TarShardDataset([p])


def test_a_forged_1tib_member_streamed_is_a_decode_error(tmp_path):
    """Streamed (a remote shard): read, and only passed over (tarfile would step through the declared size
    10 KB at a time past the end of the data)."""
    data = _good_then_forged(TIB)
    cursor = ShardCursor("remote.tar", _stream_opener(data))
    with pytest.raises(DecodeError, match=r"remote\.tar: sample 's1', member 's1.bin': truncated member"):
        list(cursor.read(0, 2))
    cursor.close()
    with pytest.raises(DecodeError, match=r"remote\.tar: sample 's1', member 's1.bin': truncated or damaged"):
        count_samples("remote.tar", _stream_opener(data))
    write_shard(tmp_path / "s.tar", data, 2)
    with RangeServer(str(tmp_path)) as srv:
        with pytest.raises(DecodeError, match=r"s\.tar: sample 's1', member 's1.bin': truncated member"):
            list(TarShardDataset(srv.url("index.json"), shuffle=False))
        ds = TarShardDataset(srv.url("index.json"), shuffle=False, on_error="skip")
        with pytest.warns(RuntimeWarning, match="s1.bin"):
            assert [s["__key__"] for s in ds] == ["s0"]
        assert len(ds.skipped) == 1


@pytest.mark.parametrize("typeflag", [b"x", b"L"], ids=["pax", "gnu_longname"])
@pytest.mark.parametrize("stream", [False, True], ids=["seekable", "streamed"])
def test_a_metadata_member_declaring_1tib_is_a_decode_error(tmp_path, typeflag, stream):
    data = member("s0.cls", b"1") + header("././@meta", TIB, typeflag) + b"9 path=a\n" + b"\0" * 503
    p = tmp_path / "meta.tar"
    p.write_bytes(data)
    opener = _stream_opener(data) if stream else (lambda: (open(p, "rb"), True))
    with pytest.raises(DecodeError, match=r"meta\.tar: .*bad tar header at byte 1024: a metadata member of "
                                          rf"{TIB} bytes"):
        count_samples("meta.tar", opener)


def test_a_sparse_member_is_refused(tmp_path):
    p = tmp_path / "sparse.tar"
    p.write_bytes(member("s0.cls", b"1") + member("s1.bin", b"\0" * 512, typeflag=b"S"))
    with pytest.raises(DecodeError, match=r"sparse\.tar: sample 's1', member 's1.bin': a sparse member"):
        TarShardDataset([p])


def test_a_header_that_breaks_tarfiles_parser_is_a_decode_error(tmp_path):
    """A GNU sparse header that says an extension block follows, at the end of the data: tarfile's parser
    indexes the missing block (a raw IndexError)."""
    h = bytearray(header("s1.bin", 0, b"S"))
    h[482] = 1  # isextended
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    p = tmp_path / "sparse_ext.tar"
    p.write_bytes(member("s0.cls", b"1") + bytes(h))
    with pytest.raises(DecodeError, match=r"sparse_ext\.tar: .*bad tar header at byte 1024: IndexError"):
        TarShardDataset([p])


def _linked_shard(path) -> None:
    """s0: jpg + cls; s1: jpg as a hard link to s0's, cls; s2: txt as a symbolic link only."""
    with tarfile.open(path, "w") as tf:
        for name, data in [("s0.jpg", b"JPEG0"), ("s0.cls", b"0")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("s1.jpg")
        link.type, link.linkname = tarfile.LNKTYPE, "s0.jpg"
        tf.addfile(link)
        info = tarfile.TarInfo("s1.cls")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"1"))
        sym = tarfile.TarInfo("s2.txt")
        sym.type, sym.linkname = tarfile.SYMTYPE, "s0.cls"
        tf.addfile(sym)


@pytest.mark.parametrize("stream", [False, True], ids=["local", "streamed"])
def test_link_members_are_passed_over_with_one_warning_per_shard(tmp_path, stream):
    """As WebDataset reads a shard (regular file members only: the reference below), with one warning that
    names the shard and how many link members were passed over."""
    p = tmp_path / "links.tar"
    _linked_shard(p)
    with tarfile.open(p) as tf:  # the reference: WebDataset's rule, regular members grouped by key
        regular = [(m.name, tf.extractfile(m).read()) for m in tf if m.isreg()]
    expected = [("s0", {"jpg": b"JPEG0", "cls": b"0"}), ("s1", {"cls": b"1"})]
    assert regular == [(f"{k}.{e}", v) for k, m in expected for e, v in m.items()]
    data = p.read_bytes()
    opener = _stream_opener(data) if stream else (lambda: (open(p, "rb"), True))
    cursor = ShardCursor("links.tar", opener)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [(s.key, {e: bytes(t.numpy()) for e, t in s.members.items()}) for s in cursor.read(0, 10)]
        cursor.close()
    assert got == expected
    told = [str(w.message) for w in caught if "link" in str(w.message)]
    assert told == ["TarShardDataset: links.tar: 2 member(s) that are not regular files passed over (hard link: 1, "
                    "symbolic link: 1): a sample gets only its regular file members, as in WebDataset; store linked "
                    "data as regular files: tar --hard-dereference, or write_shards"]


def test_a_dataset_with_link_members_warns_and_keeps_the_regular_ones(tmp_path):
    _linked_shard(tmp_path / "links.tar")
    with pytest.warns(RuntimeWarning, match=r"links\.tar: 2 member\(s\) that are not regular files passed over "
                                            r"\(hard link: 1, symbolic link: 1\)"):
        out = list(TarShardDataset([tmp_path / "links.tar"], shuffle=False, decoders={"cls": None}))
    assert [(s["__key__"], sorted(k for k in s if not k.startswith("__"))) for s in out] == [
        ("s0", ["cls", "jpg"]), ("s1", ["cls"])]


def _odd_members_shard(path) -> None:
    """Regular members of s0 and s1 with a directory, a FIFO, a character and a block device and a GNU volume
    header (type V, with data) among them, and a directory of s1's path before it."""
    def add(tf, name, kind=tarfile.REGTYPE, data=b""):
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, len(data)
        tf.addfile(info, io.BytesIO(data) if data else None)

    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        add(tf, "d0", tarfile.DIRTYPE)
        add(tf, "d0/s0.jpg", data=b"JPEG0")
        add(tf, "d0/s0.fifo", tarfile.FIFOTYPE)
        add(tf, "d0/s0.cls", data=b"0")
        add(tf, "d0/s0.tty", tarfile.CHRTYPE)
        add(tf, "d0/s0.sda", tarfile.BLKTYPE)
        add(tf, "d1", tarfile.DIRTYPE)
        add(tf, "d1/s1.label", b"V", data=b"VOLUME")
        add(tf, "d1/s1.cls", data=b"1")


@pytest.mark.parametrize("stream", [False, True], ids=["local", "streamed"])
def test_directory_fifo_device_and_unknown_members_are_passed_over_with_one_warning_per_shard(tmp_path, stream):
    """As WebDataset reads a shard (its regular members, grouped by key: the reference from tarfile below),
    with one warning that names the shard and the kinds passed over with their counts."""
    p = tmp_path / "odd.tar"
    _odd_members_shard(p)
    with tarfile.open(p) as tf:
        regular = [(m.name, tf.extractfile(m).read()) for m in tf if m.isreg()]
    expected = [("d0/s0", {"jpg": b"JPEG0", "cls": b"0"}), ("d1/s1", {"cls": b"1"})]
    assert regular == [(f"{k}.{e}", v) for k, m in expected for e, v in m.items()]
    opener = _stream_opener(p.read_bytes()) if stream else (lambda: (open(p, "rb"), True))
    cursor = ShardCursor("odd.tar", opener)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [(s.key, {e: bytes(t.numpy()) for e, t in s.members.items()}) for s in cursor.read(0, 10)]
        cursor.close()
    assert got == expected
    assert [str(w.message) for w in caught] == [
        "TarShardDataset: odd.tar: 6 member(s) that are not regular files passed over (directory: 2, FIFO: 1, "
        "character device: 1, block device: 1, type 'V': 1): a sample gets only its regular file members, as in "
        "WebDataset"]
    with pytest.warns(RuntimeWarning, match=r"odd\.tar: 6 member\(s\) that are not regular files passed over"):
        out = list(TarShardDataset([p], shuffle=False, decoders={"cls": None}))
    assert [(s["__key__"], sorted(k for k in s if not k.startswith("__"))) for s in out] == [
        ("d0/s0", ["cls", "jpg"]), ("d1/s1", ["cls"])]


def _stale_index(tmp_path, kind: str, listed: int) -> tuple[str, list]:
    """10 samples in one shard, and an index (kind: gzip, plain without a member table, plain with a member
    table cut to match) that lists ``listed`` of them."""
    samples = make_samples(10)
    write_shards(samples, tmp_path, shard_size=1 << 20, gzip=kind == "gzip")
    index = json.load(open(index_of(tmp_path)))
    entry = index["shards"][0]
    assert entry["num_samples"] == 10
    entry["num_samples"] = listed
    if kind == "plain":
        entry.pop("members")
    elif kind == "table":
        table = json.load(open(tmp_path / entry["members"]))
        table["samples"] = table["samples"][:listed]
        json.dump(table, open(tmp_path / entry["members"], "w"))
    json.dump(index, open(index_of(tmp_path), "w"))
    return index_of(tmp_path), samples


@pytest.mark.parametrize("shuffle", [False, True], ids=["in_order", "shuffled"])
@pytest.mark.parametrize("kind", ["gzip", "plain", "table"])
def test_an_index_that_undercounts_a_shard_is_an_error_or_a_counted_warning(tmp_path, kind, shuffle):
    index, samples = _stale_index(tmp_path, kind, 7)
    shard = "shard-000000.tar" + (".gz" if kind == "gzip" else "")
    with pytest.raises(DecodeError, match=rf"{shard}: has more samples than its count in the index \(7\): sample 7 "
                                          rf"\('{samples[7][0]}'\)"):
        list(TarShardDataset(index, shuffle=shuffle, seed=1))
    ds = TarShardDataset(index, shuffle=shuffle, seed=1, on_error="skip")
    with pytest.warns(RuntimeWarning, match="has more samples than its count"):
        keys = [s["__key__"] for s in ds]
    assert sorted(keys) == sorted(k for k, _ in samples[:7])  # the 7 listed, each once
    assert len(ds.skipped) == 1 and shard in ds.skipped[0]


@pytest.mark.parametrize("kind", ["gzip", "plain"])
def test_an_index_that_overcounts_a_shard_is_an_error_or_counted(tmp_path, kind):
    index, samples = _stale_index(tmp_path, kind, 12)
    with pytest.raises(DecodeError, match=r"has fewer samples than its count \(12\): sample 10 is missing"):
        list(TarShardDataset(index, shuffle=False))
    ds = TarShardDataset(index, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="fewer samples"):
        keys = [s["__key__"] for s in ds]
    assert keys == [k for k, _ in samples]
    assert len(ds.skipped) == 2  # samples 10 and 11, each counted


def test_an_exact_index_reads_every_sample_without_a_word(tmp_path):
    for kind in ("gzip", "plain", "table"):
        d = tmp_path / kind
        index, samples = _stale_index(d, kind, 10)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert [s["__key__"] for s in TarShardDataset(index, shuffle=False)] == [k for k, _ in samples]


def _fuzz_target():
    return load_file(os.path.join(ROOT, "csrc", "fuzz", "fuzz_shards.py"), "fuzz_shards")


def test_the_fuzz_targets_seeds_and_mutated_tars_raise_only_documented_errors(tmp_path):
    """``make fuzz``'s shard target without atheris: its seeds (every mode), then 400 tars mutated at random
    (fixed seed: bytes flipped, runs cut or repeated): a seed raises nothing at all, a mutated tar nothing but
    DecodeError / ValueError / OSError (the target swallows those)."""
    import random

    import spdl_torch.datasets.shards as shards

    fuzz = _fuzz_target()
    fuzz.write_seeds(str(tmp_path / "seeds"))
    work = tmp_path / "work"
    work.mkdir()
    seeds = {n: (tmp_path / "seeds" / n).read_bytes() for n in sorted(os.listdir(tmp_path / "seeds"))}
    assert sorted(seeds) == ["index_gz0", "index_gz1", "table", "tar_gz0", "tar_gz1"]
    for name, data in seeds.items():  # a seed is read whole, without an error
        fuzz._run(data, str(work), shards, ())
    rng = random.Random(0)
    tars = [seeds["tar_gz0"], seeds["tar_gz1"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(400):
            data = bytearray(rng.choice(tars))
            for _ in range(rng.randrange(1, 6)):
                k = rng.randrange(1, len(data))
                op = rng.randrange(3)
                if op == 0:
                    data[k] = rng.randrange(256)
                elif op == 1:
                    del data[k:k + rng.randrange(1, 600)]
                else:
                    data[k:k] = data[k:k + rng.randrange(1, 600)]
            fuzz._run(bytes(data), str(work), shards, (DecodeError, ValueError, OSError))
