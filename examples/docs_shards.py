"""The first snippet of docs/shards.md, run on 48 tiny photos made here: ``python examples/docs_shards.py``
(``--in DIR``: on ``DIR/data/imagenet_like/train``). It writes the shards into ``shards/`` there; the page's
last line, a dataset over ``https://`` shards, needs a server and is left out."""

import _inputs

_inputs.enter(__doc__)

# --- docs/shards.md ---
import torch
from torchvision.transforms import v2
import spdl_torch
from spdl_torch.datasets import ImageFolder, TarShardDataset, write_shards

transform = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True)])

write_shards(ImageFolder("data/imagenet_like/train"), "shards/", shard_size=100 << 20)   # + shards/index.json
ds = TarShardDataset("shards/index.json", transform=transform, batch_size=32, shuffle_buffer=1000)
loader = spdl_torch.DataLoader(ds, batch_size=32, num_workers=4, collate_fn=spdl_torch.datasets.collate)
# under torchrun: rank and world size from the process group / RANK, WORLD_SIZE; equal counts per rank
it = iter(loader); images, labels = next(it)   # float32 [B, 3, 224, 224], int64 [B]: B = 32 but at the
                                                #   end of a worker's part of the epoch, as in torch
state = loader.state_dict()      # same world size: loader.load_state_dict(state) resumes exactly
# another world size or thread count: gather every rank's state (torch.distributed.all_gather_object),
all_ranks_states = [state]       # (one rank in this example)
# in the new job, before the loader: each remaining sample once
ds.load_state_dict(TarShardDataset.merge_states(all_ranks_states))

# --- what the comments promise: 48 samples over 4 workers, 12 each ---
print(images.shape, labels.shape)
assert images.shape == (12, 3, 224, 224) and labels.shape == (12,)
