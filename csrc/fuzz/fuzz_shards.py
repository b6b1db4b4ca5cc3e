"""Fuzz target (atheris, coverage-guided) over the tar shard readers and the index readers of
``spdl_torch.datasets.shards``, which are Python: a local plain or gzip tar read seekable and streamed (``ShardCursor``,
``count_samples``), a member table (``MemberTable``) read with its tar (``TableCursor``), and an ``index.json`` read
by ``TarShardDataset`` and iterated. The only exceptions allowed out are the documented ones: ``DecodeError`` (a
damaged shard or table), ``ValueError`` (an index or table of another format) and ``OSError`` (a file the index
names is missing); anything else (a raw ``IndexError``, ``KeyError``, ``MemoryError``, ...) is a finding.

    python csrc/fuzz/fuzz_shards.py -max_total_time=60 -rss_limit_mb=2048 CORPUS_DIR SEED_DIR
    python csrc/fuzz/fuzz_shards.py --seeds SEED_DIR     # writes the seed inputs (from write_shards) and exits

``make fuzz`` installs atheris and runs it for FUZZ_SECONDS after the native targets.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import torch  # noqa: E402,F401 -- imported before instrumentation: only the readers are instrumented

_MAX_SAMPLES = 64  # samples read per input

# An input: byte 0 picks the reader (its value modulo 3); then
#   0: the tar's bytes;
#   1: byte 1 the member table's sample count (modulo 9), bytes 2-3 the table's length (little endian), the
#      table, the tar;
#   2: bytes 1-2 and 3-4 the lengths of index.json and of the member table, then index.json, the table, the tar.


def _split(data: bytes, at: int, *lengths_at: int) -> list[bytes]:
    parts, pos = [], at
    for k in lengths_at:
        n = int.from_bytes(data[k:k + 2], "little")
        parts.append(data[pos:pos + n])
        pos += n
    return parts + [data[pos:]]


def _write(path: str, content: bytes) -> None:
    with open(path, "wb") as f:
        f.write(content)


def _run(data: bytes, work: str, shards, errors) -> None:
    if not data:
        return
    mode = data[0] % 3
    tar_path = os.path.join(work, "s.tar")
    if mode == 0:  # a tar: seekable, and streamed (read through in tarfile's "r|" mode, as a remote shard)
        body = data[1:]
        _write(tar_path, body)
        for opener in (shards._tar.local_opener(tar_path), lambda: (io.BufferedReader(io.BytesIO(body)), False)):
            cursor = shards._tar.ShardCursor("s.tar", opener)
            try:
                last = -1
                for s in cursor.read(0, 1 << 62, want=lambda i: i % 3 != 1):
                    last = s.index
                    if last >= _MAX_SAMPLES:
                        break
                cursor.key_after(last)
            except errors:
                pass
            finally:
                cursor.close()
            try:
                shards._tar.count_samples("s.tar", opener)
            except errors:
                pass
    elif mode == 1:  # a member table and its tar
        num = data[1] % 9 if len(data) > 1 else 0
        table, body = _split(data, 4, 2)
        _write(tar_path, body)
        try:
            rows = shards._table.MemberTable(table, format="spdl_torch.shards/1", num_samples=num)
        except ValueError:
            return
        cursor = shards._table.TableCursor("s.tar", tar_path, rows)
        try:
            for _ in cursor.read(0, num):
                pass
            for j in range(num):
                cursor.sample(j)
            if num:
                cursor.key_after(num - 1)
        except errors:
            pass
        finally:
            cursor.close()
    else:  # an index.json beside a tar (and its member table), read by the dataset
        index, table, body = _split(data, 5, 1, 3)
        for name, content in (("index.json", index), ("s.tar.members.json", table), ("s.tar", body)):
            _write(os.path.join(work, name), content)
        try:
            ds = shards._dataset.TarShardDataset(os.path.join(work, "index.json"), shuffle=False,
                                                   decoders=dict.fromkeys(shards._members.DEFAULT_DECODERS))  # raw members
            for n, _ in enumerate(ds):
                if n >= _MAX_SAMPLES:
                    break
        except errors:
            pass


def _len2(n: int) -> bytes:
    return min(n, 65535).to_bytes(2, "little")


def write_seeds(out: str) -> None:
    """Seed inputs: shards from ``write_shards`` (plain and gzip; short, long and non-ASCII keys) in each mode."""
    import json

    from spdl_torch.datasets import write_shards

    os.makedirs(out, exist_ok=True)
    samples = [("a/s0", {"cls": b"1", "txt": b"hello"}), ("a/" + "é" * 60, {"bin": bytes(range(256))}),
               ("b/" + "k" * 120, {"cls": b"2"})]
    with tempfile.TemporaryDirectory() as d:
        for gz in (False, True):
            paths = write_shards(samples, os.path.join(d, str(gz)), gzip=gz)
            body = open(paths[0], "rb").read()
            entry = json.load(open(os.path.join(d, str(gz), "index.json")))["shards"][0]
            entry["name"] = "s.tar"
            table = b""
            if not gz:
                entry["members"] = "s.tar.members.json"
                table = open(paths[0] + ".members.json", "rb").read()
            index = json.dumps({"format": "spdl_torch.shards/1", "shards": [entry]}).encode()
            seeds = {f"tar_gz{int(gz)}": b"\0" + body,
                     f"index_gz{int(gz)}": b"\2" + _len2(len(index)) + _len2(len(table)) + index + table + body}
            if not gz:
                seeds["table"] = b"\1" + bytes([len(samples)]) + _len2(len(table)) + table + body
            for name, blob in seeds.items():
                _write(os.path.join(out, name), blob)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        write_seeds(sys.argv[2])
        return
    import atheris

    for name in ("tarfile", "gzip"):  # imported by torch: imported again below, instrumented
        sys.modules.pop(name, None)
    with atheris.instrument_imports(include=["spdl_torch", "tarfile", "gzip"]):
        import tarfile  # noqa: F401

        import spdl_torch.datasets.shards as shards
        from spdl_torch.datasets.shards import _dataset, _table, _tar  # noqa: F401
    from spdl_torch import DecodeError

    errors = (DecodeError, ValueError, OSError)
    work = tempfile.mkdtemp(prefix="spdl_torch_fuzz_shards_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    warnings.simplefilter("ignore")  # skipped link members, resource warnings: not findings

    def one(data: bytes) -> None:
        try:
            _run(data, work, shards, errors)
        except BaseException:  # a finding: abort, so that libFuzzer writes the input (a plain exit can wait on
            traceback.print_exc()  # the dataset's threads until the -timeout alarm kills it, writing nothing)
            sys.stderr.flush()
            os.abort()

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
