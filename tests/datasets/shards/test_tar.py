"""The tar reader and ``write_shards`` against Python's ``tarfile`` and the files' own bytes."""

import gzip
import json
import os
import random
import tarfile
import warnings

import pytest
import torch

from spdl_torch import DecodeError
from spdl_torch.datasets import ImageFolder, TarShardDataset, write_shards
from spdl_torch.datasets.shards._tar import ShardCursor, count_samples, local_opener, split_name

from tests._utils import images
from tests._utils.shards import index_of, make_samples


def _tarfile_members(paths):
    """The reference: every member of every shard as (name, bytes), read by tarfile."""
    out = []
    for p in paths:
        with tarfile.open(p) as tf:
            for m in tf.getmembers():
                out.append((m.name, tf.extractfile(m).read()))
    return out


def test_split_name_follows_webdataset():
    assert split_name("a/b.seg.png") == ("a/b", "seg.png")
    assert split_name("x.jpg") == ("x", "jpg")
    assert split_name("d.1/k") == ("d.1/k", "")


def test_write_shards_members_and_index_match_tarfile(shard_dir):
    d, paths, samples = shard_dir
    assert len(paths) > 3
    expected = [(f"{k}.{e}", v) for k, m in samples for e, v in m.items()]
    assert _tarfile_members(paths) == expected
    index = json.load(open(index_of(d)))
    assert [s["name"] for s in index["shards"]] == [os.path.basename(p) for p in paths]
    assert [s["num_bytes"] for s in index["shards"]] == [os.path.getsize(p) for p in paths]
    counts = [len({split_name(m.name)[0] for m in tarfile.open(p)}) for p in paths]
    assert [s["num_samples"] for s in index["shards"]] == counts
    assert all(os.path.getsize(p) <= 40_000 for p in paths)


def test_reader_gives_each_members_bytes_as_uint8_views(shard_dir):
    d, paths, samples = shard_dir
    got = []
    for p in paths:
        c = ShardCursor(p, local_opener(p))
        got += [(s.key, s.members) for s in c.read(0, 10**9)]
        c.close()
    assert [k for k, _ in got] == [k for k, _ in samples]
    for (_, members), (_, ref) in zip(got, samples):
        assert list(members) == list(ref)
        for ext, t in members.items():
            assert t.dtype == torch.uint8 and t.dim() == 1
            assert bytes(t.numpy()) == ref[ext]


def test_reader_ranges_and_skips(shard_dir):
    d, paths, samples = shard_dir
    p = paths[1]
    n = count_samples(p, local_opener(p))
    c = ShardCursor(p, local_opener(p))
    first = list(c.read(2, 5))
    more = list(c.read(5, n, want=lambda i: i % 2 == 0))  # continues without reopening
    again = list(c.read(0, 1))  # earlier: reopens
    c.close()
    assert [s.index for s in first] == [2, 3, 4]
    assert [s.index for s in more] == list(range(5, n))
    assert [s.members is None for s in more] == [i % 2 == 1 for i in range(5, n)]
    assert again[0].index == 0 and again[0].members is not None


def test_gzip_shards_read_like_plain(tmp_path):
    samples = make_samples(30)
    paths = write_shards(samples, tmp_path, shard_size=20_000, gzip=True)
    assert all(p.endswith(".tar.gz") for p in paths)
    with open(paths[0], "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    ds = TarShardDataset(paths, shuffle=False)  # no index: counted from the files
    out = list(ds)
    assert [o["__key__"] for o in out] == [k for k, _ in samples]
    assert [bytes(o["bin"].numpy()) for o in out] == [m["bin"] for _, m in samples]
    assert [o["cls"] for o in out] == [int(m["cls"]) for _, m in samples]
    assert [o["txt"] for o in out] == [m["txt"].decode() for _, m in samples]
    with gzip.open(paths[0]) as g:  # the reference reads the same archive
        assert tarfile.open(fileobj=g).getnames()[0] == f"{samples[0][0]}.txt"


def test_write_shards_packs_an_image_folder_bytes_and_labels(image_folder, tmp_path):
    image_folder(["a", "b"], 3, lambda rng, c, k: images.noise((9, 13, 3), rng), root="tree")
    folder = ImageFolder(tmp_path / "tree")
    paths = write_shards(folder, tmp_path / "out", shard_size=10240)
    members = dict(_tarfile_members(paths))
    for path, label in folder.samples:
        key = os.path.relpath(path, folder.root).rsplit(".", 1)[0]
        assert members[f"{key}.jpg"] == open(path, "rb").read()
        assert members[f"{key}.cls"] == str(label).encode()


@pytest.mark.parametrize("bad, match", [
    ([("", {"a": b""})], "non-empty"),
    ([("k.x", {"a": b""})], "dot"),
    ([("k", {"a": b""}), ("k", {"a": b""})], "repeats"),
    ([("k", {"": b""})], "empty extension"),
])
def test_write_shards_rejects_bad_samples(bad, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        write_shards(bad, tmp_path)


def test_write_shards_rejects_tiny_shard_size_and_non_bytes(tmp_path):
    with pytest.raises(ValueError, match="shard_size"):
        write_shards([], tmp_path, shard_size=100)
    with pytest.raises(TypeError, match="expected bytes"):
        write_shards([("k", {"a": "text"})], tmp_path)


def _truncated_copy(src, dst, keep):
    data = open(src, "rb").read()
    open(dst, "wb").write(data[:keep])
    return dst


def test_truncated_shard_names_shard_sample_and_member(shard_dir, tmp_path):
    d, paths, samples = shard_dir
    with tarfile.open(paths[0]) as tf:
        members = tf.getmembers()
    victim = next(m for m in members if m.name.endswith(".bin") and m.size > 1000)
    bad = _truncated_copy(paths[0], tmp_path / "bad.tar", victim.offset_data + victim.size // 2)
    key = split_name(victim.name)[0]
    with pytest.raises(DecodeError, match=rf"bad\.tar: sample '{key}', member '{victim.name}': truncated") as e:
        list(TarShardDataset([bad, paths[1]], shuffle=False))
    assert e.value.path == str(bad)


def test_truncated_shard_without_an_index_skip_keeps_the_samples_before_it(shard_dir, tmp_path):
    """No index (the shards' sample counts are counted at construction): under ``on_error="skip"`` a damaged shard
    counts and gives the samples before its damage, tells of the damage once, and the other shards are whole."""
    d, paths, samples = shard_dir
    with tarfile.open(paths[0]) as tf:
        members = tf.getmembers()
    victim = next(m for m in members if m.name.endswith(".bin") and m.size > 1000)
    bad = _truncated_copy(paths[0], tmp_path / "bad.tar", victim.offset_data + victim.size // 2)
    with pytest.raises(DecodeError, match=r"bad\.tar: sample"):  # "raise" (the default): at construction
        TarShardDataset([bad, paths[1]], shuffle=False)
    with pytest.warns(RuntimeWarning, match=r"bad\.tar.*the shard has no index: its samples from here on are not "
                                            "counted"):
        ds = TarShardDataset([bad, paths[1]], shuffle=False, on_error="skip")
    good_before = [split_name(m.name)[0] for m in members if m.offset_data + m.size <= victim.offset_data]
    victim_key = split_name(victim.name)[0]
    good_before = [k for k in dict.fromkeys(good_before) if k != victim_key]
    with tarfile.open(paths[1]) as tf:
        second = list(dict.fromkeys(split_name(m.name)[0] for m in tf.getmembers()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading tells nothing more: no "more samples than its count"
        out = list(ds)
    assert [o["__key__"] for o in out] == good_before + second
    assert len(ds.skipped) == 1 and "bad.tar" in ds.skipped[0]
    expected = {k: v for k, v in samples}
    for o in out[: len(good_before)]:  # the members before the damage are the originals'
        assert bytes(o["bin"].numpy()) == expected[o["__key__"]]["bin"]


def _here(directory, path):
    """``path`` linked into ``directory`` (an index names files below its own directory): its name there."""
    os.symlink(path, os.path.join(directory, os.path.basename(path)))
    return os.path.basename(path)


@pytest.mark.parametrize("table", [False, True], ids=["tarfile", "member_table"])
def test_truncated_shard_skip_policy_keeps_every_good_sample(shard_dir, tmp_path, table):
    d, paths, samples = shard_dir
    with tarfile.open(paths[0]) as tf:
        members = tf.getmembers()
    victim = next(m for m in members if m.name.endswith(".bin") and m.size > 1000)
    _truncated_copy(paths[0], tmp_path / "bad.tar", victim.offset_data + victim.size // 2)
    # the index says how many samples the shard should have: the lost ones are reported
    index = json.load(open(index_of(d)))
    index["shards"] = [dict(index["shards"][0], name="bad.tar"),
                       dict(index["shards"][1], name=_here(tmp_path, paths[1]))]
    for entry, p in zip(index["shards"], paths):
        if table:  # the truncated copy keeps the original's member table
            entry["members"] = _here(tmp_path, p + ".members.json")
        else:
            entry.pop("members")
    json.dump(index, open(tmp_path / "index.json", "w"))
    ds = TarShardDataset(str(tmp_path / "index.json"), shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="bad.tar"):
        out = list(ds)
    good_before = [split_name(m.name)[0] for m in members if m.offset_data + m.size <= victim.offset_data]
    good_before = list(dict.fromkeys(good_before))
    victim_key = split_name(victim.name)[0]
    good_before = [k for k in good_before if k != victim_key]
    n0 = index["shards"][0]["num_samples"]
    second = [k for k, _ in samples[n0:n0 + index["shards"][1]["num_samples"]]]
    assert [o["__key__"] for o in out] == good_before + second
    assert ds.skipped and "bad.tar" in ds.skipped[0]


def test_not_a_tar_is_a_decode_error(tmp_path):
    p = tmp_path / "junk.tar"
    p.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(DecodeError, match="junk.tar: not a readable tar"):
        TarShardDataset([p])


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        TarShardDataset([tmp_path / "nope.tar"])


def test_member_table_reads_like_tarfile_and_a_stale_one_is_refused(shard_dir, tmp_path):
    d, paths, samples = shard_dir
    ds = TarShardDataset(index_of(d), shuffle=False)
    assert all(t is not None for t in ds.shards.tables)  # write_shards wrote one per plain shard
    assert [(o["__key__"], bytes(o["bin"].numpy())) for o in ds] == [(k, m["bin"]) for k, m in samples]
    table = json.load(open(paths[0] + ".members.json"))
    table["samples"][1][2][0] += 512  # one offset off by a block
    index = json.load(open(index_of(d)))
    index["shards"] = index["shards"][:1]
    index["shards"][0].update(name=_here(tmp_path, paths[0]), members="stale.json")
    json.dump(table, open(tmp_path / "stale.json", "w"))
    json.dump(index, open(tmp_path / "index.json", "w"))
    with pytest.raises(DecodeError, match=rf"sample '{samples[1][0]}', member '{samples[1][0]}.txt': the member table "
                                          "does not match"):
        list(TarShardDataset(str(tmp_path / "index.json"), shuffle=False))


def test_a_damaged_header_mid_archive_is_an_error_not_the_end(shard_dir, tmp_path):
    """tarfile alone takes a bad header after the first for the end of the archive (the rest dropped, no
    word); GNU tar reports it, and so do we."""
    d, paths, samples = shard_dir
    with tarfile.open(paths[0]) as tf:
        members = tf.getmembers()
    victim = members[len(members) // 2]
    data = bytearray(open(paths[0], "rb").read())
    data[victim.offset:victim.offset + 512] = b"\xff" * 512
    bad = tmp_path / "badheader.tar"
    bad.write_bytes(bytes(data))
    with pytest.raises(DecodeError, match=rf"badheader\.tar: .*bad tar header at byte {victim.offset}"):
        TarShardDataset([bad])  # counting its samples reads every header
    n = count_samples(str(paths[0]), local_opener(paths[0]))
    assert n == len({split_name(m.name)[0] for m in members})  # the intact shard still counts every sample


def test_a_damaged_gzip_shard_is_an_error_not_wrong_bytes(tmp_path):
    rng = random.Random(3)  # incompressible members: the middle of the file is member data
    paths = write_shards([(f"k{i}", {"bin": rng.randbytes(100_000), "cls": b"1"}) for i in range(3)], tmp_path,
                         shard_size=1 << 20, gzip=True)
    data = bytearray(open(paths[0], "rb").read())
    for k in range(len(data) // 2, len(data) // 2 + 64):  # inside a stored (incompressible) block
        data[k] ^= 0x5A
    try:
        gzip.decompress(bytes(data))
    except (gzip.BadGzipFile, EOFError, OSError) as e:
        reference = e
    else:
        pytest.fail("the reference read the damaged gzip without an error")
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(bytes(data))
    assert "CRC" in str(reference)
    with pytest.raises(DecodeError, match=r"bad\.tar\.gz: damaged gzip data, found at its end.*CRC"):
        list(TarShardDataset([bad], shuffle=False))


@pytest.mark.parametrize("shuffle_buffer", [None, 1000, 7], ids=["in_order", "shuffled", "small_buffer"])
def test_skip_counts_every_sample_a_truncated_shard_loses(tmp_path, shuffle_buffer):
    samples = make_samples(60)
    paths = write_shards(samples, tmp_path / "s", shard_size=40_000, gzip=True)
    index = os.path.join(tmp_path / "s", "index.json")
    _truncated_copy(paths[1], paths[1], os.path.getsize(paths[1]) // 2)
    kw = dict(shuffle=False) if shuffle_buffer is None else dict(shuffle=True, shuffle_buffer=shuffle_buffer)
    ds = TarShardDataset(index, on_error="skip", **kw)
    with pytest.warns(RuntimeWarning, match="shard-000001"):
        keys = [o["__key__"] for o in ds]
    assert len(keys) == len(set(keys))
    assert len(keys) + len(ds.skipped) == len(samples)  # every sample delivered or counted as skipped
    assert all("shard-000001" in m for m in ds.skipped)
    assert set(keys) >= {k for k, _ in samples} - set(_keys_of_shard(index, 1, samples))


def _keys_of_shard(index, i, samples):
    shards = json.load(open(index))["shards"]
    start = sum(s["num_samples"] for s in shards[:i])
    return [k for k, _ in samples[start:start + shards[i]["num_samples"]]]


@pytest.mark.parametrize("table", [False, True], ids=["tarfile", "member_table"])
def test_a_missing_shard_is_skipped_under_skip_and_raises_otherwise(tmp_path, table):
    samples = make_samples(60)
    paths = write_shards(samples, tmp_path, shard_size=40_000, gzip=not table)
    index = os.path.join(tmp_path, "index.json")
    os.remove(paths[1])
    with pytest.raises(FileNotFoundError):
        list(TarShardDataset(index, shuffle=False))
    ds = TarShardDataset(index, shuffle=False, on_error="skip")
    with pytest.warns(RuntimeWarning, match="shard-000001"):
        keys = [o["__key__"] for o in ds]
    lost = _keys_of_shard(index, 1, samples)
    assert keys == [k for k, _ in samples if k not in lost]
    assert len(ds.skipped) == len(lost)


def test_an_image_folder_with_dots_in_file_names_round_trips(tmp_path):
    """torchvision accepts dog/photo.1.jpg beside dog/photo.2.jpg, and directories with dots: their samples
    keep apart, and every image member is found under its last suffix."""
    from PIL import Image

    names = ["dog/photo.1.jpg", "dog/photo.2.jpg", "dog/photo_1.jpg", "dog/100%.jpg", "cat.v1/img.2020.JPG",
             "cat.v1/plain.png"]
    for k, name in enumerate(names):
        p = tmp_path / "tree" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8 + k, 6), (10 * k, 0, 0)).save(p, format="PNG" if name.endswith("png") else "JPEG")
    folder = ImageFolder(tmp_path / "tree")
    write_shards(folder, tmp_path / "out", shard_size=10240)
    got = list(TarShardDataset(index_of(tmp_path / "out"), shuffle=False))
    assert len(got) == len(folder.samples) == len(names)
    for sample, (path, label) in zip(got, folder.samples):
        ext = path.rsplit(".", 1)[1].lower()
        assert set(sample) == {"__key__", "__shard__", "__index__", ext, "cls"}
        assert bytes(sample[ext].numpy()) == open(path, "rb").read() and sample["cls"] == label
    keys = [s["__key__"] for s in got]
    assert len(set(keys)) == len(keys) and "cat.v1/img%2E2020" in keys and "dog/100%25" in keys
    import torchvision.transforms.v2 as v2

    images = TarShardDataset(index_of(tmp_path / "out"), shuffle=False, transform=v2.Compose([
        v2.ToImage(), v2.Resize((4, 4))]), warn_unfused=False)
    assert [label for _, label in images] == [label for _, label in folder.samples]


def test_write_shards_refuses_files_that_would_be_one_sample_and_slashed_extensions(tmp_path):
    from PIL import Image

    for name in ("a/x.jpg", "a/x.png"):
        p = tmp_path / "tree" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 4)).save(p, format="PNG" if name.endswith("png") else "JPEG")
    with pytest.raises(ValueError, match=r"x\.jpg and .*x\.png would be one sample 'a/x'"):
        write_shards(ImageFolder(tmp_path / "tree"), tmp_path / "out")
    with pytest.raises(ValueError, match="'/'"):
        write_shards([("s0", {"x/y": b"1"})], tmp_path / "out2")


def test_repr_shows_the_shards_the_order_and_what_decodes(shard_dir):
    import torchvision.transforms.v2 as v2

    from spdl_torch.datasets.shards import AudioBatchDecoder

    d, paths, samples = shard_dir
    text = repr(TarShardDataset(index_of(d), seed=3))
    assert f"num_shards={len(paths)}" in text and f"num_samples={len(samples)}" in text and "seed=3" in text
    assert "dict mode, decoders: cls: _int, txt: _text, json: _json" in text
    text = repr(TarShardDataset(index_of(d), decoders={"flac": AudioBatchDecoder(num_channels=2)}))
    assert "dict mode, decoders: cls: _int, txt: _text, json: _json, flac: AudioBatchDecoder(sample_rate=16000, " \
           "num_channels=2" in text  # merged over the defaults
    text = repr(TarShardDataset(index_of(d), transform=v2.Compose([v2.Resize(32), v2.CenterCrop(28)])))
    assert "fused into decode_images(geometry='eval', resize_shorter=32, height=28, width=28" in text
