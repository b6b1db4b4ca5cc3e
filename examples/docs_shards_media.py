"""The second snippet of docs/shards.md (audio and video members), run on shards written here: 64 samples, each
with a 5 s FLAC and a 3 s video made with the ffmpeg CLI. ``python examples/docs_shards_media.py`` (``--in DIR``:
on ``speech.flac`` and ``clip.mp4`` in DIR); the shards go into ``media/shards/`` there."""

import os

import _inputs

_inputs.enter(__doc__, needs_ffmpeg=True)

import spdl_torch
from torchvision.transforms import v2
from spdl_torch.datasets import TarShardDataset, write_shards

flac, mp4 = open("speech.flac", "rb").read(), open("clip.mp4", "rb").read()
os.makedirs("media", exist_ok=True)
os.chdir("media")
write_shards(((f"s{i:03d}", {"flac": flac, "mp4": mp4, "cls": b"0"}) for i in range(64)), "shards/")

# --- docs/shards.md, second snippet ---
from spdl_torch.datasets.shards import AudioBatchDecoder, VideoClipBatchDecoder

ds = TarShardDataset("shards/index.json", batch_size=32, decoders={   # merged over the defaults: cls, txt, json
    "flac": AudioBatchDecoder(sample_rate=16000, duration=2.0, random_crop=True),   # Waveform(data, lengths)
    "mp4": VideoClipBatchDecoder(num_frames_per_clip=16, transform=v2.Compose([v2.Resize(128), v2.CenterCrop(112)]))})
batch = next(iter(spdl_torch.DataLoader(ds, batch_size=32, num_workers=2)))
batch["flac"].data, batch["flac"].lengths   # Tensor[32, 1, 32000], int64 Tensor[32]; batch["mp4"]: [32, 1, 16, 3, 112, 112]

# --- what the comments promise ---
import torch

print(batch["flac"].data.shape, batch["flac"].lengths.dtype, batch["mp4"].shape)
assert batch["flac"].data.shape == (32, 1, 32000) and batch["flac"].lengths.dtype == torch.int64
assert batch["mp4"].shape == (32, 1, 16, 3, 112, 112)
assert batch["cls"].tolist() == [0] * 32  # decoded by the default cls decoder, which the decoders given kept
