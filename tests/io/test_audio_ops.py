"""The audio ops' registration contract: opcheck (schemas, fakes, dispatch) and torch.compile of the batch op."""

import pytest
import torch

import spdl_torch  # noqa: F401  (registers the ops)
from spdl_torch.io import decode_audio_batch

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_ops")
    return [
        A.make_audio(root / "a.wav", rate=22050, channels=2, codec="pcm_s16le", seconds=0.3),
        A.make_audio(root / "b.flac", rate=48000, channels=1, codec="flac16", seconds=0.5),
    ]


def _bytes(path):
    return torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)


@pytest.mark.parametrize("kwargs", [{}, {"sample_rate": 16000, "num_channels": 1},
                                    {"start_seconds": 0.1, "stop_seconds": 0.2, "dtype": torch.int16}])
def test_opcheck_decode_audio(files, kwargs):
    torch.library.opcheck(torch.ops.spdl_torch.decode_audio.default, (_bytes(files[0]),), kwargs)
    torch.library.opcheck(torch.ops.spdl_torch.decode_audio_file.default, (str(files[1]),), kwargs)


@pytest.mark.parametrize("kwargs", [
    {"duration": 0.25},
    {"duration": 0.25, "seeds": torch.tensor([3, 4])},
    {"duration": 0.1, "starts": [0.0, 0.2], "dtype": torch.int16},
    {},
])
def test_opcheck_decode_audio_batch(files, kwargs):
    args = ([_bytes(p) for p in files], [])
    torch.library.opcheck(torch.ops.spdl_torch.decode_audio_batch.default, args,
                          {"sample_rate": 16000, "num_channels": 2, **kwargs})
    torch.library.opcheck(torch.ops.spdl_torch.decode_audio_batch.default, ([], [str(p) for p in files]),
                          {"sample_rate": 16000, "num_channels": 2, **kwargs})


def test_metadata_op_schema(files):
    torch.library.opcheck(torch.ops.spdl_torch.audio_metadata.default, (_bytes(files[0]),),
                          test_utils=("test_schema",))


def test_compile_fullgraph_batch(files):
    data = [_bytes(p) for p in files]

    def f(d, seeds):
        batch, lengths, offsets, ok = torch.ops.spdl_torch.decode_audio_batch(
            d, [], sample_rate=16000, num_channels=1, duration=0.25, seeds=seeds)
        return batch * 2.0, lengths

    seeds = torch.tensor([1, 2])
    compiled = torch.compile(f, fullgraph=True, backend="eager")
    got, lengths = compiled(data, seeds)
    want = decode_audio_batch(files, sample_rate=16000, num_channels=1, duration=0.25, seeds=seeds)
    assert got.shape == (2, 1, 4000)
    assert torch.equal(got, want.data * 2.0) and torch.equal(lengths, want.lengths)
