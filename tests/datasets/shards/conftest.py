"""Shared shard fixtures: small synthetic samples written with ``write_shards`` (and checked against ``tarfile``)."""

import os

import pytest

from spdl_torch.datasets import write_shards


def make_samples(n, seed=0):
    """``n`` samples ``(key, {"txt", "cls", "bin"})``; ``bin`` has a size varying from 0 to 3000 bytes."""
    import random

    rng = random.Random(seed)
    return [(f"d{i // 50}/s{i:05d}", {"txt": f"sample {i}".encode(), "cls": str(i % 7).encode(),
                                     "bin": rng.randbytes(rng.randrange(0, 3000))}) for i in range(n)]


@pytest.fixture(scope="session")
def shard_dir(tmp_path_factory):
    """240 samples in shards of ~40 KB (uneven sample counts per shard), with their index."""
    d = tmp_path_factory.mktemp("shards")
    samples = make_samples(240)
    paths = write_shards(samples, d, shard_size=40_000)
    return d, paths, samples


def index_of(d):
    return os.path.join(d, "index.json")
