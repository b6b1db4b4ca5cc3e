"""Dict mode's member decoders (``TarShardDataset(decoders=)``, ``_members.as_mapping``): the user's mapping merged
over the defaults (``cls`` -> int, ``txt`` -> str, ``json`` -> the parsed value), a key replacing a default, a key
adding one, ``None`` dropping one; values that are no decoders refused."""

import json

import pytest
import torch

from spdl_torch.datasets import TarShardDataset, write_shards

from tests._utils.shards import index_of

SAMPLES = [(f"s{i}", {"cls": str(i % 3).encode(), "txt": f"caption {i}".encode(),
                      "json": json.dumps({"i": i, "tags": ["a", "b"][: i % 3]}).encode(), "bin": bytes([i]) * i})
           for i in range(6)]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    d = tmp_path_factory.mktemp("decoders")
    write_shards(SAMPLES, d)
    return index_of(d)


def _read(index, decoders):
    return {s["__key__"]: s for s in TarShardDataset(index, shuffle=False, decoders=decoders)}


def _raw(sample: dict, ext: str) -> bytes:
    t = sample[ext]
    assert isinstance(t, torch.Tensor) and t.dtype == torch.uint8 and t.dim() == 1
    return bytes(t.numpy())


@pytest.mark.parametrize("decoders", [None, {}], ids=["None", "empty"])
def test_the_defaults_decode_cls_txt_and_json(index, decoders):
    got = _read(index, decoders)
    for key, members in SAMPLES:
        s = got[key]
        assert s["cls"] == int(members["cls"]) and type(s["cls"]) is int
        assert s["txt"] == members["txt"].decode()
        assert s["json"] == json.loads(members["json"])
        assert _raw(s, "bin") == members["bin"]  # no decoder: the member's bytes


def test_a_user_key_replaces_a_default(index):
    got = _read(index, {"cls": lambda t: ("label", int(bytes(t.numpy())))})
    for key, members in SAMPLES:
        s = got[key]
        assert s["cls"] == ("label", int(members["cls"]))
        assert s["txt"] == members["txt"].decode() and s["json"] == json.loads(members["json"])  # the others kept


def test_a_user_key_adds_a_decoder(index):
    got = _read(index, {"bin": lambda t: t.numel()})
    for key, members in SAMPLES:
        s = got[key]
        assert s["bin"] == len(members["bin"])
        assert s["cls"] == int(members["cls"]) and s["txt"] == members["txt"].decode()
        assert s["json"] == json.loads(members["json"])


def test_none_drops_a_default(index):
    got = _read(index, {"json": None})
    for key, members in SAMPLES:
        s = got[key]
        assert _raw(s, "json") == members["json"]  # dropped: the raw member
        assert s["cls"] == int(members["cls"]) and s["txt"] == members["txt"].decode()
    got = _read(index, {"cls": None, "txt": None, "json": None})  # every default dropped: nothing decoded
    for key, members in SAMPLES:
        assert {ext: _raw(got[key], ext) for ext in members} == members


def test_the_merged_mapping_is_what_the_dataset_holds_and_shows(index):
    ds = TarShardDataset(index, decoders={"json": None, "bin": len})
    assert list(ds.decoders) == ["cls", "txt", "bin"]
    assert "dict mode, decoders: cls: _int, txt: _text, bin: len" in repr(ds)
    assert ds.spdl_native_loading() is False  # a user's Python decoder: worker processes
    assert TarShardDataset(index, decoders={"json": None}).spdl_native_loading() is True  # only the defaults left


@pytest.mark.parametrize(("decoders", "match"), [
    ({"cls": 3}, r"decoders\['cls'\]: expected a callable, a BatchDecoder or None \(no decoder\), got int"),
    ({"txt": "utf-8"}, r"decoders\['txt'\]: expected a callable, a BatchDecoder or None \(no decoder\), got str"),
    ([("cls", int)], r"decoders: expected a mapping \{ext: decoder or None\}, got list"),
])
def test_a_value_that_is_no_decoder_is_refused(index, decoders, match):
    with pytest.raises(TypeError, match=match):
        TarShardDataset(index, decoders=decoders)
