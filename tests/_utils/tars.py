"""Tar members built byte by byte, for tests of hostile shards: a header may declare any size or type, whatever
data follows it (``tarfile`` would refuse to write most of them)."""

import gzip
import json
import os


def header(name: str, size: int, typeflag: bytes = b"0", linkname: str = "") -> bytes:
    """One 512-byte ustar header; a size over 11 octal digits, or a negative one, is written in GNU base-256 (what
    tarfile and GNU tar read)."""
    h = bytearray(512)
    raw = name.encode()
    h[0:len(raw)] = raw
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    if 0 <= size < 8 ** 11:
        h[124:136] = b"%011o\0" % size
    elif size >= 0:
        h[124:136] = b"\x80" + size.to_bytes(11, "big")
    else:  # GNU base-256, negative: two's complement in 95 bits after the 0xff marker
        h[124:136] = b"\xff" + (size % (1 << 88)).to_bytes(11, "big")
    h[136:148] = b"00000000000\0"
    h[156:157] = typeflag
    link = linkname.encode()
    h[157:157 + len(link)] = link
    h[257:265] = b"ustar\x0000"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def member(name: str, data: bytes, declared: int | None = None, typeflag: bytes = b"0") -> bytes:
    """A header (declaring ``declared`` bytes, by default the data's length) and the data, padded to 512."""
    return header(name, len(data) if declared is None else declared, typeflag) + data + b"\0" * (-len(data) % 512)


def pax_member(records: dict[str, str]) -> bytes:
    """A pax extended header member (type ``x``) holding ``records`` (``"<len> key=value\\n"`` each), padded."""
    body = b""
    for key, value in records.items():
        text = f" {key}={value}\n"
        n = len(text) + 1
        while len(f"{n}{text}") != n:
            n += 1
        body += f"{n}{text}".encode()
    return member("././@PaxHeader", body, typeflag=b"x")


def write_shard(path, body: bytes, num_samples: int, *, gz: bool = False) -> str:
    """``body`` (members, without the end-of-archive blocks) as a shard at ``path`` (gzip-compressed with
    ``gz``) and an ``index.json`` beside it that lists ``num_samples`` samples (no member table); returns the
    index's path."""
    path = os.fspath(path)
    with open(path, "wb") as f:
        f.write(gzip.compress(body) if gz else body)
    index = os.path.join(os.path.dirname(path), "index.json")
    with open(index, "w") as f:
        json.dump({"format": "spdl_torch.shards/1", "shards": [
            {"name": os.path.basename(path), "num_samples": num_samples, "num_bytes": os.path.getsize(path)}]}, f)
    return index
