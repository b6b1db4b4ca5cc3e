"""The snippet of docs/audio.md, run on 5 s audio files made here with the ffmpeg CLI:
``python examples/docs_audio.py`` (``--in DIR``: on ``speech.flac``, ``speech.mp3`` and ``a.ogg`` in DIR)."""

import _inputs

_inputs.enter(__doc__, needs_ffmpeg=True)
# the files, labels and seeds the snippet leaves to you
paths, labels, seeds = ["speech.flac", "speech.mp3", "a.ogg"], [0, 1, 2], [1, 2, 3]

# --- docs/audio.md ---
import spdl_torch
from spdl_torch.io import audio_metadata, decode_audio, decode_audio_batch

meta = audio_metadata("speech.flac")            # sample_rate, num_channels, duration_seconds, codec, ...
wav = decode_audio("speech.mp3", sample_rate=16000, num_channels=1)   # wav.data: float32 Tensor[1, N]
clip = decode_audio(open("a.ogg", "rb").read(), start_seconds=1.0, stop_seconds=3.5)   # a window, in seconds
clip.sample_rate, clip.pts_seconds                                    # the stream's rate (Hz), 1.0
b = decode_audio_batch(paths, sample_rate=16000, num_channels=1, duration=4.0, seeds=seeds)
b.data, b.lengths                                                           # [B, 1, 64000], int64 [B]

ds = spdl_torch.datasets.AudioDataset(paths, labels, sample_rate=16000, num_channels=1, duration=4.0,
                                      random_crop=True)
for audio, labels in spdl_torch.DataLoader(ds, batch_size=32, num_workers=2):
    audio.data, audio.lengths                                               # [32, 1, 64000], int64 [32]

# --- what the comments promise ---
import torch

print(wav.data.shape, wav.sample_rate, clip.pts_seconds, b.data.shape, b.lengths)
assert wav.data.shape[0] == 1 and wav.sample_rate == 16000 and clip.pts_seconds == 1.0
assert b.data.shape == (3, 1, 64000) and b.lengths.dtype == torch.int64
