"""Bad audio input: DecodeError naming the file and FFmpeg's reason, never a crash or silent garbage."""

import subprocess

import pytest
import torch

from spdl_torch.errors import DecodeError
from spdl_torch.io import audio_metadata, decode_audio, decode_audio_batch

from .. import audio as A

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
        part = decode_audio(cut, strict=False)
        assert 0 < part.shape[1] < 16000
        whole = decode_audio(media[key])
        assert torch.equal(part, whole[:, : part.shape[1]]) or key == "flac"


def test_corrupt_stream_inside(media, tmp_path):
    data = bytearray(media["mp3"].read_bytes())
    for k in range(len(data) // 3, len(data) // 3 + 600, 7):  # trash the middle frames' headers and data
        data[k] = 0xFF
    bad = tmp_path / "bad.mp3"
    bad.write_bytes(bytes(data))
    try:
        out = decode_audio(bad)
    except DecodeError as e:
        assert e.path == str(bad) and "mp3" in str(e)
    else:  # FFmpeg resynchronised on valid frames: then it must be exactly what the CLI decodes
        assert torch.equal(out, A.cli_samples(bad))
    # lenient: the frames before the damage are the clean file's; the damaged ones are skipped (the CLI's
    # output differs there: its muxer reorders on the broken timestamps, so it is no reference for them)
    lenient = decode_audio(bad, strict=False)
    clean = decode_audio(media["mp3"])
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
        out = decode_audio(bytes(huge))
        assert out.shape == (1, 16000)
    except DecodeError as e:
        assert "truncated" in str(e)
    assert decode_audio(bytes(huge), strict=False).shape == (1, 16000)
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
    assert torch.count_nonzero(b.samples[1]) == 0
    with pytest.raises(DecodeError, match=r"sample 1: ") as info:
        decode_audio_batch([p.read_bytes() for p in paths], sample_rate=16000, num_channels=1)
    assert info.value.sample_index == 1


def test_bad_arguments(media):
    with pytest.raises(ValueError, match="sample_rate"):
        decode_audio(media["wav"], sample_rate=0)
    with pytest.raises(ValueError, match="num_channels"):
        decode_audio(media["wav"], num_channels=65)
    with pytest.raises(ValueError, match="stop"):
        decode_audio(media["wav"], start=0.5, stop=0.25)
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
