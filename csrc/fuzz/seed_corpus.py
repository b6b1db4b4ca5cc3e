"""Copies a capped sample of the real-media corpus into per-target seed folders for the libFuzzer targets.

    python csrc/fuzz/seed_corpus.py OUT_DIR
Media are never committed: the seeds live under build/fuzz/ (ignored). Without a corpus, the seeds are a few
synthetic headers only.
"""

import hashlib
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests._utils.corpus import corpus_dir  # noqa: E402

MAX_BYTES = 64 * 1024  # the targets run with -max_len=65536
MAX_FILES = 400


def _exif_payloads(data: bytes):
    """TIFF structures of the JPEG's APP1 "Exif" segments."""
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        marker, length = data[pos + 1], struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        if marker in (0xDA, 0xD9) or length < 2:
            return
        payload = data[pos + 4 : pos + 2 + length]
        if marker == 0xE1 and payload[:6] == b"Exif\0\0":
            yield payload[6:]
        pos += 2 + length


def _synthetic_jpeg(**kwargs) -> bytes:
    """A small gradient photo-like JPEG encoded by Pillow (a seed that does not need the corpus)."""
    import io

    from PIL import Image

    img = Image.radial_gradient("L").resize((52, 44)).convert("RGB")
    img.putpixel((5, 5), (255, 0, 0))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90, **kwargs)
    return buf.getvalue()


def _synthetic_still(fmt: str) -> bytes:
    """A small PNG / WebP with an EXIF orientation, or a GIF with a transparency index (Pillow)."""
    import io

    from PIL import Image

    img = Image.radial_gradient("L").resize((12, 10)).convert("RGB")
    buf = io.BytesIO()
    if fmt == "GIF":
        img.convert("P").save(buf, "GIF", transparency=0)
    else:
        exif = Image.Exif()
        exif[0x0112] = 6
        img.save(buf, fmt, exif=exif, **({"lossless": True} if fmt == "WEBP" else {}))
    return buf.getvalue()


def _video_seeds(root: Path | None, folder: Path) -> None:
    """video_decode: the corpus's small videos (whole, or their first MAX_BYTES), plus tiny ffmpeg-made ones
    (H.264 with B-frames in MP4 and Matroska, VP9 in WebM, MPEG-4 in AVI) when the CLI exists."""
    import shutil
    import subprocess
    import tempfile

    videos = sorted(p for p in (root / "video").iterdir() if p.is_file()) if root and (root / "video").is_dir() else []
    for p in sorted(videos, key=lambda p: p.stat().st_size)[:24]:
        data = p.read_bytes()[:MAX_BYTES]
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    if shutil.which("ffmpeg") is None:
        return
    src = "testsrc2=size=32x24:rate=10:duration=0.8"
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in (("a.mp4", "-c:v libx264 -bf 2 -g 4"), ("b.mkv", "-c:v libx264 -g 3"),
                           ("c.webm", "-c:v libvpx-vp9 -g 4"), ("d.avi", "-c:v mpeg4 -g 4")):
            path = Path(tmp) / name
            done = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, *args.split(), str(path)],
                                  capture_output=True)
            if done.returncode == 0 and path.stat().st_size <= MAX_BYTES:
                data = path.read_bytes()
                (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def _audio_seeds(root, put) -> None:
    """audio_decode: small real files of each suffix (corpus), plus tiny ffmpeg-made WAV/FLAC/MP3/Ogg/Opus."""
    import shutil
    import subprocess
    import tempfile

    if root is not None and (root / "audio").is_dir():
        by_suffix = {}
        for p in sorted((root / "audio").iterdir()):
            if p.is_file() and p.stat().st_size <= 65536:
                by_suffix.setdefault(p.suffix.lower(), []).append(p)
        for group in by_suffix.values():
            for p in group[:: max(1, len(group) // 4)][:4]:
                put(p.read_bytes())
    if shutil.which("ffmpeg") is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in [("a.wav", ["-c:a", "pcm_s16le"]), ("a.flac", ["-c:a", "flac"]),
                           ("a.mp3", ["-c:a", "libmp3lame"]), ("a.ogg", ["-c:a", "libvorbis"]),
                           ("a.opus", ["-c:a", "libopus", "-ar", "48000"])]:
            path = Path(tmp) / name
            r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                                "sine=frequency=440:sample_rate=16000:duration=0.1", *args, str(path)],
                               capture_output=True)
            if r.returncode == 0:
                put(path.read_bytes())


def _wav_seeds(root, put) -> None:
    """wav_reader: the first 64 KiB of corpus WAVs, plus headers with odd chunks, EXTENSIBLE, RF64 and data sizes
    of 0 / past the end (tests/_utils/audio.py builds them as the tests do)."""
    from tests._utils import audio as A

    if root is not None and (root / "audio").is_dir():
        wavs = sorted(p for p in (root / "audio").iterdir() if p.suffix.lower() == ".wav")
        for p in wavs[:: max(1, len(wavs) // 16)][:16]:
            put(p.read_bytes()[:MAX_BYTES])
    pcm = bytes(range(256)) * 8
    fmt16 = A.wav_fmt(tag=1, channels=2, rate=16000, bits=16)
    junk = A.riff_chunk(b"junk", b"abc")
    for data in (A.wav_file(fmt16, pcm), A.wav_file(fmt16, pcm, before=[junk], after=[junk]),
                 A.wav_file(fmt16, pcm, data_size=0), A.wav_file(fmt16, pcm, data_size=len(pcm) * 4),
                 A.wav_file(A.wav_fmt(tag=3, channels=1, rate=8000, bits=64), pcm, rf64=True),
                 A.wav_file(A.wav_fmt(tag=1, channels=6, rate=48000, bits=24, extensible=(24, 0x60F)), pcm[:1800]),
                 A.wav_file(A.wav_fmt(tag=1, channels=1, rate=8000, bits=8), pcm[:255])):
        put(data)


def main(out: Path) -> None:
    targets = {t: out / t for t in ("decode_image", "decode_batch", "jpeg_markers", "tiff_ifd", "image_chunks",
                                    "video_decode", "audio_decode", "wav_reader")}
    for d in targets.values():
        d.mkdir(parents=True, exist_ok=True)
    root = corpus_dir()
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".tsv") if root else []
    small = [p for p in files if p.stat().st_size <= MAX_BYTES]
    step = max(1, len(small) // MAX_FILES)

    def put(target: str, data: bytes) -> None:
        (targets[target] / hashlib.sha1(data).hexdigest()).write_bytes(data)

    for p in small[::step]:
        put("decode_image", p.read_bytes())
    jpegs = [p for p in small if p.read_bytes()[:2] == b"\xff\xd8"]
    for p in jpegs[:: max(1, len(jpegs) // MAX_FILES)]:
        put("decode_batch", p.read_bytes())
    stills = []  # PNG, WebP, GIF: the container readers' seeds, capped below
    for p in files:
        data = p.read_bytes()
        if data[:2] == b"\xff\xd8":
            head = data[: min(len(data), 4096)]  # the markers before the scan: what the walker reads
            put("jpeg_markers", head)
            for tiff in _exif_payloads(data):
                put("tiff_ifd", tiff[:MAX_BYTES])
        elif data[:4] in (b"II*\0", b"MM\0*"):
            put("tiff_ifd", data[:4096])
        elif data[:4] in (b"\x89PNG", b"RIFF", b"GIF8"):
            stills.append(data[:MAX_BYTES])
    _video_seeds(root, out / "video_decode")
    _audio_seeds(root, lambda data: put("audio_decode", data))
    _wav_seeds(root, lambda data: put("wav_reader", data))
    # Synthetic seeds, so each target has something to start from without the media corpus.
    put("tiff_ifd", b"II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0\0\0\0\0")
    put("jpeg_markers", b"\xff\xd8\xff\xc0\0\x11\x08\0\x10\0\x10\x03\x01\x22\0\x02\x11\x01\x03\x11\x01\xff\xd9")
    for data in stills[:: max(1, len(stills) // MAX_FILES)]:
        put("image_chunks", data)
    for fmt in ("PNG", "WEBP", "GIF"):
        put("image_chunks", _synthetic_still(fmt))
    for kwargs in ({}, {"progressive": True}, {"subsampling": 0}, {"restart_marker_blocks": 3}):
        put("decode_batch", _synthetic_jpeg(**kwargs))
    for t, d in targets.items():
        print(f"seeds {t}: {sum(1 for _ in d.iterdir())} files in {d}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
