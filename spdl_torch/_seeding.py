"""SplitMix64 (Steele, Lea, Flood 2014), the one mixing function behind every per-sample seed.

``csrc/core/crop_geometry.cpp``'s ``SplitMix64`` generator steps the same function (``next()`` is
``splitmix64(state)`` with the state advanced by the same constant), so a sample's crop draws and its seed
come from one definition. The seed chain of ``(base_seed, epoch, index)`` is shared by
``spdl_torch.transforms.sample_seeds`` (int64 seeds for ``decode_images``, two's complement of the chain)
and the loader's per-sample worker seed (``spdl_torch._loader_worker.sample_seed``, the chain's top 63 bits):
two outputs of one chain, kept apart because each caller's results must stay as they are.
"""

MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One SplitMix64 output for state ``x`` (an unsigned 64-bit int): add the golden-ratio increment,
    then mix."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def seed_chain_head(base_seed: int, epoch: int) -> int:
    """``splitmix64(splitmix64(base_seed) ^ epoch)``: the part of the chain shared by an epoch's samples."""
    return splitmix64(splitmix64(int(base_seed) & MASK64) ^ (int(epoch) & MASK64))


def seed_chain(base_seed: int, epoch: int, index: int) -> int:
    """``splitmix64(splitmix64(splitmix64(base_seed) ^ epoch) ^ index)`` as an unsigned 64-bit int: depends
    only on (base_seed, epoch, index)."""
    return splitmix64(seed_chain_head(base_seed, epoch) ^ (int(index) & MASK64))
