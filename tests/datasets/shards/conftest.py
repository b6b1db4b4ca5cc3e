"""Shared shard fixtures: small synthetic samples written with ``write_shards`` (and checked against ``tarfile``)."""

import os

import pytest

from spdl_torch.datasets import write_shards

from tests._utils.s3_server import upload_dir
from tests._utils.shards import make_samples


@pytest.fixture(scope="session")
def shard_dir(tmp_path_factory):
    """240 samples in shards of ~40 KB (uneven sample counts per shard), with their index."""
    d = tmp_path_factory.mktemp("shards")
    samples = make_samples(240)
    paths = write_shards(samples, d, shard_size=40_000)
    return d, paths, samples


@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server per session (a subprocess on a free 127.0.0.1 port, signatures checked) and one bucket
    (``s3_server.bucket``); tests write under prefixes of their own."""
    pytest.importorskip("moto", reason="moto[server] is not installed (make test installs it)")
    from tests._utils.s3_server import MotoServer

    with MotoServer() as s3:
        s3.bucket = "spdl-torch-tests"
        s3.client().create_bucket(Bucket=s3.bucket)
        yield s3


@pytest.fixture
def s3(s3_server, monkeypatch, tmp_path):
    """The session's S3 server with the reader's AWS environment set (the user's AWS files pointed away)."""
    pytest.importorskip("obstore", reason="obstore is not installed (the 'cloud' extra; make test installs it)")
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    return s3_server


@pytest.fixture(scope="session")
def s3_shards(s3_server, tmp_path_factory):
    """160 samples in 6 shards of ~100 KB written locally, put in the bucket once: every file under
    ``indexed/``, only the tars under ``raw/`` (in reverse order, with a README and a nested tar beside them).
    Returns ``(local_dir, paths, samples)``."""
    d = tmp_path_factory.mktemp("s3shards")
    samples = make_samples(160, seed=4)
    paths = write_shards(samples, d, shard_size=100_000)
    upload_dir(s3_server, d, "indexed/")
    client = s3_server.client()
    for p in reversed(paths):
        client.upload_file(p, s3_server.bucket, f"raw/{os.path.basename(p)}")
    client.put_object(Bucket=s3_server.bucket, Key="raw/README.txt", Body=b"not a shard")
    client.upload_file(paths[0], s3_server.bucket, "raw/nested/shard-999999.tar")  # below the prefix
    return d, paths, samples
