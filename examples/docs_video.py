"""The snippet of docs/video.md, run on a 3 s video made here with the ffmpeg CLI:
``python examples/docs_video.py`` (``--in DIR``: on ``DIR/clip.mp4``)."""

import _inputs

_inputs.enter(__doc__, needs_ffmpeg=True)
paths, labels = ["clip.mp4", "clip.mp4"], [0, 1]  # the videos and their labels the snippet leaves to you

# --- docs/video.md ---
from spdl_torch.io import video_metadata, decode_video_frames, decode_video_clips
from spdl_torch.datasets import VideoClipDataset
from torchvision.transforms import v2

m = video_metadata("clip.mp4")            # num_frames, average_fps, duration_seconds, width, height, rotation, ...
f = decode_video_frames("clip.mp4", indices=[40, 0, 40])      # f.data: uint8 Tensor[3, 3, H, W], any order;
                                                               # f.pts_seconds: float64 Tensor[3]
f = decode_video_frames("clip.mp4", seconds=[1.5])            # the frame displayed at 1.5 s (pts <= t < next pts)
clips = decode_video_clips(paths, num_frames_per_clip=16, num_indices_between_frames=2, num_clips=8, height=112, width=112,
                           resize_shorter=128)                 # clips.data: uint8 Tensor[B, 8, 16, 3, 112, 112]
ds = VideoClipDataset(paths, labels, num_frames_per_clip=16, num_indices_between_frames=2, num_clips=8,
                      transform=v2.Compose([v2.Resize(128), v2.CenterCrop(112)]))   # fused, one call per batch

# --- what the comments promise ---
print(m.num_frames, f.data.shape, clips.data.shape)
assert f.data.shape[0] == 1 and clips.data.shape == (2, 8, 16, 3, 112, 112)
