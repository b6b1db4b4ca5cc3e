"""Shared shard fixtures: small synthetic samples written with ``write_shards`` (and checked against ``tarfile``)."""

import pytest

from spdl_torch.datasets import write_shards

from tests._utils.shards import make_samples


@pytest.fixture(scope="session")
def shard_dir(tmp_path_factory):
    """240 samples in shards of ~40 KB (uneven sample counts per shard), with their index."""
    d = tmp_path_factory.mktemp("shards")
    samples = make_samples(240)
    paths = write_shards(samples, d, shard_size=40_000)
    return d, paths, samples
