"""Synthetic samples for tar shards (``write_shards`` input) and the index path of a shard folder."""

import os


def make_samples(n, seed=0):
    """``n`` samples ``(key, {"txt", "cls", "bin"})``; ``bin`` has a size varying from 0 to 3000 bytes."""
    import random

    rng = random.Random(seed)
    return [(f"d{i // 50}/s{i:05d}", {"txt": f"sample {i}".encode(), "cls": str(i % 7).encode(),
                                     "bin": rng.randbytes(rng.randrange(0, 3000))}) for i in range(n)]


def index_of(d):
    return os.path.join(d, "index.json")
