"""Hostile inputs: every corrupt, truncated, oversized or mislabelled file either decodes to Pillow's pixels or
raises spdl_torch.DecodeError, in bounded memory and time; the outcome of each is pinned in a table.

The table, ``tests/reliability/data/hostile_outcomes.tsv``, holds one row per input: name, sha256 prefix of its bytes, our
outcome and Pillow's. A change of any outcome fails the test, so a behaviour change is a reviewed table diff.
Regenerate it with ``SPDL_TORCH_UPDATE_HOSTILE=1 pytest tests/reliability/test_hostile_inputs.py`` (notes are kept).

Inputs: the corpus's ``corrupt`` category (gdk-pixbuf's fail/ and randomly-modified/ sets and its truncated
files), PngSuite's corrupted ``x*.png``, plus inputs synthesized here from corpus files: truncated JPEG/PNG/
GIF/WebP/BMP, wrong file extensions, zero-length and random bytes, format magic followed by garbage,
headers declaring 65535 x 65535 / 2^31 / 2^64 pixels, and hostile EXIF (64 KB, self-referencing IFDs, deep
nesting, out-of-range offsets, 200 APP1 segments). The decodes run in a subprocess
(``tests/_utils/run_hostile_probe.py``): a crash or hang fails this test naming the file, not the whole session.
"""

import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import spdl_torch
from spdl_torch.io import decode_image

from tests._utils.corpus import REPO, files, require_corpus, short_name

# One subprocess decodes every hostile file for the module's four checks (~6 s): the slow tier, which CI runs.
pytestmark = pytest.mark.slow

TABLE = Path(__file__).parent / "data" / "hostile_outcomes.tsv"
UPDATE = os.environ.get("SPDL_TORCH_UPDATE_HOSTILE") == "1"
COLUMNS = ("name", "sha256", "outcome", "reference", "note")
# Outcomes that need no explanation; any other must carry a note in the table.
ACCEPTED = {"decoded-equal", "decoded-close", "DecodeError"}
# Peak RSS a single decode may add: a fixed allowance (FFmpeg/TurboJPEG contexts, the input copy) plus
# 16 bytes per output pixel (the output, an orientation or colour-conversion copy and the decoder's frame).
# A refused file gets the allowance only: the pixel limit is checked before pixel memory is allocated.
BASE_ALLOWANCE_KB = 64 * 1024
BYTES_PER_PIXEL = 16
PER_DECODE_SECONDS = 10.0


# ------------------------------------------------------------------------------------------ synthesis
def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def _png_declaring(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def _jpeg_with_sof_size(jpeg: bytes, width: int, height: int) -> bytes:
    out = bytearray(jpeg)
    pos = 2
    while pos + 4 <= len(out):
        marker, length = out[pos + 1], struct.unpack(">H", out[pos + 2 : pos + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            out[pos + 5 : pos + 9] = struct.pack(">HH", height, width)
            return bytes(out)
        pos += 2 + length
    raise ValueError("no SOF marker")


def _app1(exif_tiff: bytes) -> bytes:
    payload = b"Exif\0\0" + exif_tiff
    assert len(payload) + 2 <= 0xFFFF
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def _ifd(entries, next_ifd=0, endian="<") -> bytes:
    out = struct.pack(endian + "H", len(entries))
    for tag, typ, count, value in entries:
        out += struct.pack(endian + "HHI", tag, typ, count)
        out += struct.pack(endian + "HH", value, 0) if typ in (3, 8) else struct.pack(endian + "I", value)
    return out + struct.pack(endian + "I", next_ifd)


def _tiff(entries, next_ifd=0, endian="<", ifd_offset=8, extra=b"") -> bytes:
    head = (b"II" if endian == "<" else b"MM") + struct.pack(endian + "HI", 42, ifd_offset)
    return head + _ifd(entries, next_ifd, endian) + extra


def _with_exif(jpeg: bytes, *segments: bytes) -> bytes:
    return jpeg[:2] + b"".join(segments) + jpeg[2:]


def _synthetic(base_jpeg: bytes, png: bytes, gif: bytes, webp: bytes, bmp: bytes) -> dict[str, bytes]:
    rnd = random.Random(20261130)
    out: dict[str, bytes] = {"synth/empty.bin": b""}
    for n in (1, 17, 1000, 65536):
        out[f"synth/random-{n}.bin"] = rnd.randbytes(n)
    magics = {"jpeg": b"\xff\xd8\xff", "png": b"\x89PNG\r\n\x1a\n", "gif": b"GIF89a", "bmp": b"BM",
              "webp": b"RIFF\0\0\0\0WEBP", "tiff": b"II*\0", "pgm": b"P5\n", "ppm": b"P6\n"}
    for fmt, magic in magics.items():
        out[f"synth/magic-{fmt}-then-garbage.bin"] = magic + rnd.randbytes(2000)
    # Declared sizes far beyond the pixel limit: refused from the header, before any pixel memory.
    out["synth/jpeg-65535x65535.jpg"] = _jpeg_with_sof_size(base_jpeg, 65535, 65535)
    out["synth/jpeg-0x0.jpg"] = _jpeg_with_sof_size(base_jpeg, 0, 0)
    out["synth/png-65536x32768-2^31-pixels.png"] = _png_declaring(65536, 32768)
    out["synth/png-3895519243x4057328400-int64-overflow.png"] = _png_declaring(0xE830E80B, 0xF1D5EB10)
    out["synth/png-0x0.png"] = _png_declaring(0, 0)
    out["synth/gif-65535x65535.gif"] = (b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0, 0, 0)
                                        + b"\x2c" + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0) + b"\x02\x02\x44\x01\x00;")
    out["synth/bmp-2^31-square.bmp"] = bmp[:18] + struct.pack("<ii", 2**31 - 1, -(2**31)) + bmp[26:]
    out["synth/webp-vp8x-16Mx16M.webp"] = (b"RIFF" + struct.pack("<I", 22) + b"WEBPVP8X" + struct.pack("<I", 10)
                                           + b"\0\0\0\0" + b"\xff\xff\xff" + b"\xff\xff\xff")
    out["synth/tiff-100000x100000.tif"] = _tiff([(256, 4, 1, 100000), (257, 4, 1, 100000), (258, 3, 1, 8),
                                                  (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, 8), (279, 4, 1, 16)])
    out["synth/pgm-100000x100000.pgm"] = b"P5\n100000 100000\n255\n" + bytes(64)
    # Truncations of real files.
    for cut in (0.5, 0.9):
        out[f"synth/png-cut-{cut}.png"] = png[: int(len(png) * cut)]
        out[f"synth/gif-cut-{cut}.gif"] = gif[: int(len(gif) * cut)]
        out[f"synth/webp-cut-{cut}.webp"] = webp[: int(len(webp) * cut)]
        out[f"synth/bmp-cut-{cut}.bmp"] = bmp[: int(len(bmp) * cut)]
    # Hostile EXIF on a real JPEG.
    orient = lambda v, endian="<": _tiff([(0x0112, 3, 1, v)], endian=endian)  # noqa: E731
    out["synth/exif-orientation-6-big-endian.jpg"] = _with_exif(base_jpeg, _app1(orient(6, ">")))
    out["synth/exif-orientation-9.jpg"] = _with_exif(base_jpeg, _app1(orient(9)))
    out["synth/exif-orientation-0.jpg"] = _with_exif(base_jpeg, _app1(orient(0)))
    out["synth/exif-orientation-as-long.jpg"] = _with_exif(base_jpeg, _app1(_tiff([(0x0112, 4, 1, 8)])))
    out["synth/exif-orientation-as-ascii.jpg"] = _with_exif(base_jpeg, _app1(_tiff([(0x0112, 2, 1, 6)])))
    many = [(0x1000 + i, 3, 1, i) for i in range(5400)] + [(0x0112, 3, 1, 3)]  # 64 KB of IFD0, orientation last
    out["synth/exif-64KB-5401-entries.jpg"] = _with_exif(base_jpeg, _app1(_tiff(many)))
    out["synth/exif-ifd-self-loop.jpg"] = _with_exif(base_jpeg, _app1(_tiff([(0x0112, 3, 1, 8), (0x8769, 4, 1, 8)], next_ifd=8)))
    nested = b""
    depth = 200  # a chain of ExifIFD pointers, each to the next IFD (18 bytes each)
    for i in range(depth):
        nxt = 8 + 30 + 18 * (i + 1)
        nested += _ifd([(0x8769, 4, 1, nxt if i < depth - 1 else 8)])
    out["synth/exif-200-nested-ifds.jpg"] = _with_exif(
        base_jpeg, _app1(_tiff([(0x0112, 3, 1, 6), (0x8769, 4, 1, 38)], extra=nested)))
    out["synth/exif-ifd-offset-out-of-range.jpg"] = _with_exif(base_jpeg, _app1(orient(6)[:4] + b"\xf0\xff\xff\xff" + orient(6)[8:]))
    out["synth/exif-entry-count-65535.jpg"] = _with_exif(base_jpeg, _app1(orient(6)[:8] + b"\xff\xff" + orient(6)[10:]))
    out["synth/exif-200-app1-segments.jpg"] = _with_exif(base_jpeg, *[_app1(orient(1 + i % 8)) for i in range(200)])
    out["synth/exif-segment-past-eof.jpg"] = base_jpeg[:2] + b"\xff\xe1\xff\xf0Exif\0\0" + orient(6)
    out["synth/exif-garbage-after-header.jpg"] = _with_exif(base_jpeg, _app1(b"MM\0*" + rnd.randbytes(3000)))
    return out


def _cases(tmp: Path) -> list[dict]:
    """All hostile inputs as files under tmp: [{"name", "path", "sha256"}]."""
    require_corpus()
    cases: dict[str, Path] = {}
    for p in files("corrupt"):
        cases[f"corrupt/{short_name(p)}"] = p
    for p in files("pngsuite", ".png"):
        if short_name(p).startswith("x"):
            cases[f"pngsuite/{short_name(p)}"] = p
    jpegs = files("jpeg_variants", ".jpg", ".jpeg")
    written: dict[str, bytes] = {}
    for p in jpegs:  # truncated JPEGs: half the file, and all but the EOI marker
        data = p.read_bytes()
        written[f"truncated/{short_name(p)}.half"] = data[: len(data) // 2]
        written[f"truncated/{short_name(p)}.no-eoi"] = data[:-2]
    by_name = {short_name(p): p for p in files("jpeg_variants") + files("pngsuite") + files("gif_suite")
               + files("webp_tiff_bmp_gif")}
    base_jpeg = by_name["video-001.jpeg"].read_bytes()
    png = by_name["basn2c08.png"].read_bytes()
    gif = next(p for n, p in sorted(by_name.items()) if n.endswith(".gif")).read_bytes()
    webp = next(p for n, p in sorted(by_name.items()) if n.endswith(".webp")).read_bytes()
    bmp = next(p for n, p in sorted(by_name.items()) if n.endswith(".bmp")).read_bytes()
    written.update(_synthetic(base_jpeg, png, gif, webp, bmp))
    # Wrong extensions: the format comes from the bytes, so these must decode exactly as their true type.
    written["wrong-ext/png-named.jpg"] = png
    written["wrong-ext/jpeg-named.png"] = base_jpeg
    written["wrong-ext/gif-named.webp"] = gif
    written["wrong-ext/bmp-named.tiff"] = bmp
    for i, (name, data) in enumerate(sorted(written.items())):
        path = tmp / f"{i:04d}{Path(name).suffix}"
        path.write_bytes(data)
        cases[name] = path
    out = []
    for name, path in sorted(cases.items()):
        out.append({"name": name, "path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]})
    return out


# --------------------------------------------------------------------------------------------- table
def _read_table() -> dict[str, dict]:
    if not TABLE.is_file():
        return {}
    rows = {}
    for line in TABLE.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t") + [""] * len(COLUMNS)
        row = dict(zip(COLUMNS, fields))
        rows[row["name"]] = row
    return rows


def _write_table(rows: list[dict]) -> None:
    header = ("# Hostile-input outcomes, pinned by tests/reliability/test_hostile_inputs.py. Regenerate with\n"
              "#   SPDL_TORCH_UPDATE_HOSTILE=1 .venv/bin/python -m pytest tests/reliability/test_hostile_inputs.py\n"
              "# outcome: ours in RGB mode - decoded-equal (Pillow's pixels), decoded-close (<= 2 levels, JPEG),\n"
              "#   DecodeError, or (needing a note) decoded-differs / decoded-shape-differs / decoded (Pillow fails).\n"
              "# reference: Pillow - decoded, or error:<exception type>.\n"
              "#" + "\t".join(COLUMNS) + "\n")
    body = "".join("\t".join(r[c] for c in COLUMNS) + "\n" for r in rows)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(header + body)


def _ref_class(reference: str) -> str:
    """Pillow's outcome as decoded / error: the exception type it raises may change between Pillow releases
    (Pillow is not pinned), which is not a change in our behaviour."""
    return reference.split(":")[0]


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    cases = _cases(tmp)
    manifest = tmp / "manifest.json"
    manifest.write_text(json.dumps(cases))
    proc = subprocess.run([sys.executable, "-m", "tests._utils.run_hostile_probe", str(manifest)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[r["name"]] = r
    if proc.returncode != 0:
        started = [line[6:] for line in proc.stderr.splitlines() if line.startswith("START ")]
        pytest.fail(f"the decode subprocess died (rc={proc.returncode}) on {started[-1] if started else '?'}:\n"
                    f"{proc.stderr[-3000:]}")
    return cases, results


def test_outcomes_match_table(probe):
    cases, results = probe
    table = _read_table()
    rows = []
    for c in cases:
        r = results[c["name"]]
        old = table.get(c["name"], {})
        rows.append({"name": c["name"], "sha256": c["sha256"], "outcome": r["outcome"], "reference": r["reference"],
                     "note": old.get("note", "")})
    if UPDATE or not table:
        _write_table(rows)
        if not UPDATE:
            pytest.fail(f"{TABLE} did not exist; written now: review and commit it")
        return
    changes = []
    for row in rows:
        old = table.get(row["name"])
        if old is None:
            changes.append(f"new input {row['name']}: {row['outcome']} (Pillow: {row['reference']})")
        elif (old["sha256"], old["outcome"], _ref_class(old["reference"])) != (
                row["sha256"], row["outcome"], _ref_class(row["reference"])):
            changes.append(f"{row['name']}: was {old['outcome']} (Pillow {old['reference']}, sha {old['sha256']}), "
                           f"now {row['outcome']} (Pillow {row['reference']}, sha {row['sha256']}): "
                           f"{results[row['name']]['message']}")
    for name in set(table) - {r["name"] for r in rows}:
        changes.append(f"input {name} is in the table but no longer produced")
    assert not changes, (f"{len(changes)} hostile-input outcome(s) changed; if intended, regenerate {TABLE} with "
                         "SPDL_TORCH_UPDATE_HOSTILE=1:\n" + "\n".join(changes))


def test_only_pillow_pixels_or_decode_error(probe):
    """No crash, no exception other than DecodeError, and no pixels Pillow disagrees with unless explained."""
    cases, results = probe
    table = _read_table()
    bad = [f"{n}: {r['outcome']} (Pillow {r['reference']}) {r['message']}" for n, r in sorted(results.items())
           if r["outcome"] not in ACCEPTED and not table.get(n, {}).get("note")]
    assert not bad, "unexplained outcomes (add a note to the table if intended):\n" + "\n".join(bad)
    others = [n for n, r in results.items() if r["outcome"].startswith("other:")]
    assert not others, f"exceptions other than DecodeError: {others}"


def test_memory_and_time_bounded(probe):
    cases, results = probe
    if any(r["hwm_growth_kb"] < 0 for r in results.values()):
        pytest.skip("/proc/self/clear_refs is not writable: peak RSS per decode cannot be measured")
    over = []
    for n, r in sorted(results.items()):
        limit = BASE_ALLOWANCE_KB + r["pixels"] * BYTES_PER_PIXEL // 1024
        if r["hwm_growth_kb"] > limit:
            over.append(f"{n}: peak RSS +{r['hwm_growth_kb']} KB > {limit} KB ({r['outcome']})")
        if r["seconds"] > PER_DECODE_SECONDS:
            over.append(f"{n}: {r['seconds']:.1f} s")
    assert not over, "\n".join(over)


def test_header_bombs_refused_cheaply(probe):
    """Headers declaring more pixels than the limit fail from the header: no pixel memory, no time."""
    cases, results = probe
    for name in ("synth/jpeg-65535x65535.jpg", "synth/png-65536x32768-2^31-pixels.png",
                 "synth/png-3895519243x4057328400-int64-overflow.png", "synth/gif-65535x65535.gif",
                 "synth/bmp-2^31-square.bmp", "synth/webp-vp8x-16Mx16M.webp", "synth/tiff-100000x100000.tif",
                 "synth/pgm-100000x100000.pgm"):
        r = results[name]
        assert r["outcome"] == "DecodeError", (name, r)
        assert r["seconds"] < 1.0, (name, r)
        if r["hwm_growth_kb"] >= 0:
            assert r["hwm_growth_kb"] < 32 * 1024, (name, r)
    assert "15805400857370401200 pixels exceeds the limit" in results[
        "synth/png-3895519243x4057328400-int64-overflow.png"]["message"]


# Regressions found by the fuzzers and sanitizers; small synthetic bytes, no corpus needed.
@pytest.mark.parametrize("data", [b"\xff\xd8\xff\xd9",
                                  b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"],
                         ids=["soi-eoi", "soi-app0"])
def test_jpeg_without_frame_header_is_decode_error(data):
    """TurboJPEG 2.1's header read succeeds without setting a size for data that ends before a frame header
    (it takes them for tables-only streams); such a file once reached the output allocator as a 0x0 image
    (found by ``fuzz_decode_image`` on its first seed, an EXIF-only JPEG cut before its SOF)."""
    with pytest.raises(spdl_torch.DecodeError, match="no frame header"):
        decode_image(data)


def test_png_size_overflowing_int64_is_refused_by_the_limit():
    """PNG sizes are 32-bit unsigned: 3895519243 x 4057328400 pixels overflowed int64 in the pixel-limit check
    (undefined behaviour, found by UBSan in ``make test-sanitize``); the product is now unsigned 64-bit."""
    with pytest.raises(spdl_torch.DecodeError, match="15805400857370401200 pixels exceeds the limit"):
        decode_image(_png_declaring(0xE830E80B, 0xF1D5EB10))
