"""Bad audio input: DecodeError naming the file and FFmpeg's reason, never a crash or silent garbage."""

import subprocess

import pytest
import torch

import spdl_torch
from spdl_torch.datasets import AudioDataset
from spdl_torch import DecodeError
from spdl_torch.io import audio_metadata, decode_audio, decode_audio_batch

from tests._utils import audio as A

pytestmark = pytest.mark.skipif(A.FFMPEG is None, reason="the ffmpeg CLI is not installed")


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_bad")
    out = {
        "wav": A.make_audio(root / "ok.wav", rate=16000, channels=1, codec="pcm_s16le", seconds=1.0),
        "flac": A.make_audio(root / "ok.flac", rate=16000, channels=2, codec="flac16", seconds=1.0),
        "mp3": A.make_audio(root / "ok.mp3", rate=16000, channels=1, codec="mp3", seconds=1.0),
    }
    video = root / "video_only.mp4"
    subprocess.run([A.FFMPEG, "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x32:rate=5:duration=0.4",
                    "-c:v", "mpeg4", str(video)], check=True)
    out["video"] = video
    return out


def test_zero_length(tmp_path):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(DecodeError, match=r"empty\.wav: cannot open the input") as info:
        decode_audio(empty)
    assert info.value.path == str(empty)
    with pytest.raises(DecodeError, match=r"<bytes>: empty input \(0 bytes\)"):
        decode_audio(b"")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.wav"):
        decode_audio(tmp_path / "nope.wav")


def test_video_only(media):
    with pytest.raises(DecodeError, match=r"video_only\.mp4: no audio stream in this mov,mp4"):
        decode_audio(media["video"])
    with pytest.raises(DecodeError, match="no audio stream"):
        audio_metadata(media["video"])


def test_garbage(media):
    with pytest.raises(DecodeError, match="<bytes>: cannot open the input: Invalid data found"):
        decode_audio(bytes(range(256)) * 8)


def test_truncated_pcm_and_flac_are_errors_in_strict_mode(media):
    for key in ("wav", "flac"):
        data = media[key].read_bytes()
        cut = data[: (len(data) * 2 // 3) & ~3]  # whole samples: the PCM decoder sees no partial packet
        with pytest.raises(DecodeError, match=r"<bytes>: (truncated (pcm_s16le|flac) stream: the header states 16000|"
                                              r"corrupt audio stream: the flac decoder|corrupt packet in the wav input)"):
            decode_audio(cut)
        # lenient: what decoded, equal to the CLI's output for the same bytes
        part = decode_audio(cut, strict=False).data
        assert 0 < part.shape[1] < 16000
        whole = decode_audio(media[key]).data
        assert torch.equal(part, whole[:, : part.shape[1]]) or key == "flac"


def test_corrupt_stream_inside(media, tmp_path):
    data = bytearray(media["mp3"].read_bytes())
    for k in range(len(data) // 3, len(data) // 3 + 600, 7):  # trash the middle frames' headers and data
        data[k] = 0xFF
    bad = tmp_path / "bad.mp3"
    bad.write_bytes(bytes(data))
    try:
        out = decode_audio(bad).data
    except DecodeError as e:
        assert e.path == str(bad) and "mp3" in str(e)
    else:  # FFmpeg resynchronised on valid frames: then it must be exactly what the CLI decodes
        assert torch.equal(out, A.cli_samples(bad))
    # lenient: the frames before the damage are the clean file's; the damaged ones are skipped (the CLI's
    # output differs there: its muxer reorders on the broken timestamps, so it is no reference for them)
    lenient = decode_audio(bad, strict=False).data
    clean = decode_audio(media["mp3"]).data
    assert 4000 < lenient.shape[1] and torch.equal(lenient[:, :4000], clean[:, :4000])


def test_absurd_declared_sizes(media):
    data = bytearray(media["wav"].read_bytes())
    assert data[:4] == b"RIFF" and data[12:16] == b"fmt "
    rate_at = 24
    big = bytearray(data)
    big[rate_at:rate_at + 4] = (2_000_000_000).to_bytes(4, "little")
    with pytest.raises(DecodeError, match="absurd input sample rate 2000000000 Hz|cannot"):
        decode_audio(bytes(big))
    # a data chunk that claims 4 GiB: decodes what is there (no huge allocation), strict says truncated
    huge = bytearray(data)
    k = huge.index(b"data")
    huge[k + 4:k + 8] = (0xFFFFFFF0).to_bytes(4, "little")
    try:
        out = decode_audio(bytes(huge)).data
        assert out.shape == (1, 16000)
    except DecodeError as e:
        assert "truncated" in str(e)
    assert decode_audio(bytes(huge), strict=False).data.shape == (1, 16000)
    with pytest.raises(DecodeError, match="exceeds max_samples"):
        decode_audio(media["wav"], max_samples=1000)


def test_batch_names_the_bad_sample(media, tmp_path):
    bad = tmp_path / "bad.flac"
    bad.write_bytes(b"fLaC" + bytes(100))
    paths = [media["wav"], bad, media["mp3"]]
    with pytest.raises(DecodeError, match=r"bad\.flac: ") as info:
        decode_audio_batch(paths, sample_rate=16000, num_channels=1, duration=0.5)
    assert info.value.sample_index == 1 and info.value.path == str(bad)
    b = decode_audio_batch(paths, sample_rate=16000, num_channels=1, duration=0.5, strict=False)
    assert b.ok.tolist() == [True, False, True]
    assert b.lengths.tolist() == [8000, 0, 8000]
    assert torch.count_nonzero(b.data[1]) == 0
    with pytest.raises(DecodeError, match=r"sample 1: ") as info:
        decode_audio_batch([p.read_bytes() for p in paths], sample_rate=16000, num_channels=1)
    assert info.value.sample_index == 1


def test_bad_arguments(media):
    with pytest.raises(ValueError, match="sample_rate"):
        decode_audio(media["wav"], sample_rate=0)
    with pytest.raises(ValueError, match="num_channels"):
        decode_audio(media["wav"], num_channels=65)
    with pytest.raises(ValueError, match="stop"):
        decode_audio(media["wav"], start_seconds=0.5, stop_seconds=0.25)
    with pytest.raises(ValueError, match="dtype"):
        decode_audio(media["wav"], dtype=torch.float64)
    with pytest.raises(ValueError, match="sample_rate and num_channels"):
        decode_audio_batch([media["wav"]], sample_rate=16000, num_channels=None)
    with pytest.raises(ValueError, match="not a mix"):
        decode_audio_batch([media["wav"], media["wav"].read_bytes()], sample_rate=16000, num_channels=1)
    with pytest.raises(ValueError, match="need a duration"):
        decode_audio_batch([media["wav"]], sample_rate=16000, num_channels=1, seeds=[1])
    with pytest.raises(TypeError, match="expected a path"):
        decode_audio(3.5)


def test_batch_missing_file_is_file_not_found(media, tmp_path):
    missing = tmp_path / "nope.flac"
    for duration in (None, 0.5):  # whole files and windows
        with pytest.raises(FileNotFoundError, match=r"sample 1: .*nope\.flac") as info:
            decode_audio_batch([media["wav"], missing], sample_rate=16000, num_channels=1, duration=duration)
        assert info.value.errno == 2
        # strict=False keeps the per-sample policy: a zero slot, ok False
        b = decode_audio_batch([media["wav"], missing], sample_rate=16000, num_channels=1, duration=duration,
                               strict=False)
        assert b.ok.tolist() == [True, False] and b.lengths.tolist() == [16000 if duration is None else 8000, 0]
        assert torch.count_nonzero(b.data[1]) == 0
    with pytest.raises(FileNotFoundError, match=r"nope\.flac"):
        AudioDataset([media["wav"], missing], sample_rate=16000, num_channels=1).__getitems__([0, 1])


def test_batch_over_max_samples_is_a_value_error_naming_the_size(media, tmp_path, monkeypatch):
    wav = media["wav"]  # 1 s at 16 kHz
    # windows: B x C x N, checked before anything is decoded or allocated (the default cap: 1 Gi samples)
    with pytest.raises(ValueError, match=r"a batch of 64 x 2 channels x 144000000 samples exceeds max_samples"):
        decode_audio_batch([wav] * 64, sample_rate=48000, num_channels=2, duration=3000.0)
    exact = 4 * 2 * 8000
    assert decode_audio_batch([wav] * 4, sample_rate=16000, num_channels=2, duration=0.5, max_samples=exact).ok.all()
    with pytest.raises(ValueError, match="exceeds max_samples"):
        decode_audio_batch([wav] * 4, sample_rate=16000, num_channels=2, duration=0.5, max_samples=exact - 1)
    with pytest.raises(ValueError, match="exceeds max_samples"):  # the op itself checks too
        torch.ops.spdl_torch.decode_audio_batch([], [str(wav)] * 4, sample_rate=16000, num_channels=2,
                                                duration=0.5, max_samples=exact - 1)
    # whole files: the batch padded to the longest; the message names the file that passed its share
    short = A.make_audio(tmp_path / "short.wav", rate=16000, channels=1, codec="pcm_s16le", seconds=0.25)
    paths = [short, wav, short]
    b = decode_audio_batch(paths, sample_rate=16000, num_channels=1, max_samples=3 * 16000)
    assert b.data.shape == (3, 1, 16000) and torch.equal(b.data[1], decode_audio(wav).data)
    for strict in (True, False):  # the call's size, not a bad sample: raised whatever strict is
        with pytest.raises(ValueError, match=r"ok\.wav: decodes to more than 15999 samples x 1 channels, so the "
                                             r"batch of 3 padded to it exceeds max_samples = 47999"):
            decode_audio_batch(paths, sample_rate=16000, num_channels=1, max_samples=3 * 16000 - 1, strict=strict)
    # the default cap is spdl_torch.io.limits.audio_samples, read at each call
    monkeypatch.setattr(spdl_torch.io.limits, "audio_samples", 2 * 16000)
    with pytest.raises(ValueError, match="max_samples = 32000"):
        decode_audio_batch([wav] * 3, sample_rate=16000, num_channels=1)
    with pytest.raises(DecodeError, match="exceeds max_samples"):
        decode_audio(wav, sample_rate=48000)
    assert decode_audio(wav).data.shape == (1, 16000)


def test_bool_float_and_out_of_range_arguments(media):
    wav = media["wav"]
    for kwargs in ({"sample_rate": True}, {"sample_rate": 16000.0}, {"sample_rate": 2**70}, {"num_channels": 1.0},
                   {"num_channels": True}, {"max_samples": True}, {"max_samples": 2**70}, {"max_samples": 1.5e6},
                   {"start_seconds": True}, {"stop_seconds": "1"}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            decode_audio(wav, **kwargs)
    batch = dict(sample_rate=16000, num_channels=1)
    for kwargs in ({"duration": True}, {"duration": 0.5, "starts": [True, 0.0]}, {"duration": 0.5, "seeds": [1.7, 2]},
                   {"duration": 0.5, "seeds": [True, 2]}, {"duration": 0.5, "seeds": [2**70, 2]},
                   {"duration": 0.5, "seeds": torch.tensor([1.5, 2.0])},
                   {"duration": 0.5, "seeds": torch.tensor([True, False])}, {"sample_rate": 2**21}):
        with pytest.raises(ValueError, match="duration|starts|seeds|sample_rate"):
            decode_audio_batch([wav, wav], **{**batch, **kwargs})
    # integers of other types are ints
    import numpy as np

    want = decode_audio(wav, sample_rate=8000).data
    assert torch.equal(decode_audio(wav, sample_rate=np.int64(8000), num_channels=torch.tensor(1)).data, want)
    b = decode_audio_batch([wav, wav], sample_rate=8000, num_channels=1, duration=0.5,
                           seeds=[np.int64(-3), torch.tensor(2**62)])
    assert torch.equal(b.offsets, decode_audio_batch([wav, wav], sample_rate=8000, num_channels=1, duration=0.5,
                                                     seeds=torch.tensor([-3, 2**62])).offsets)
    # AudioDataset: its arguments and its indices (a float or bool index would be truncated to another sample)
    with pytest.raises(ValueError, match="seed"):
        AudioDataset([wav], sample_rate=16000, num_channels=1, seed=1.5)
    with pytest.raises(ValueError, match="duration"):
        AudioDataset([wav], sample_rate=16000, num_channels=1, duration=True)
    ds = AudioDataset([wav, media["flac"]], sample_rate=16000, num_channels=1)
    for bad in (1.7, True, torch.tensor(1.0)):
        with pytest.raises(TypeError, match="index"):
            ds.__getitems__([bad])
    with pytest.raises(IndexError):
        ds.__getitems__([2**70])
    assert torch.equal(ds[np.int64(1)][0].data, ds[1][0].data)


def test_times_in_errors_are_seconds_in_a_readable_form(media):
    """A time in a message prints with its unit, to the microsecond with trailing zeros dropped, or with six
    significant digits when huge (1e300 printed as %f is 301 digits and no unit)."""
    data = torch.frombuffer(bytearray(media["wav"].read_bytes()), dtype=torch.uint8)
    with pytest.raises(IndexError, match=r"the window starts at sample 80000 \(5 s at 16000 Hz\) but the audio has "
                                         r"only 16000 samples \(1 s\)$"):
        decode_audio(media["wav"], start_seconds=5.0)
    with pytest.raises(ValueError, match=r"expected stop >= start \(1e\+300 s\) or None, got 1 s$"):
        torch.ops.spdl_torch.decode_audio(data, start_seconds=1e300, stop_seconds=1.0)
    with pytest.raises(ValueError, match=r"expected a finite start >= 0 seconds, got -0\.5 s$"):
        torch.ops.spdl_torch.decode_audio(data, start_seconds=-0.5)
    with pytest.raises(ValueError, match=r"decode_audio_batch: expected duration at most 1e6 seconds, got "
                                         r"duration=1e\+300 s$"):
        decode_audio_batch([media["wav"]], sample_rate=16000, num_channels=1, duration=1e300)
