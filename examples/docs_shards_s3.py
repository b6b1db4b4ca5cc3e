"""The object-storage snippet of docs/shards.md, run against a local S3 server started here (moto, from
``tests/_utils/s3_server.py``, with a bucket named ``bucket``) on 48 tiny photos made here:
``python examples/docs_shards_s3.py``. The AWS environment and a ``training`` profile point at that server; the
brace-pattern line names a thousand shards (the photos make one) and is left out. Needs obstore and moto[server]."""

import os
import sys

import _inputs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_inputs.enter(__doc__)
sys.path.insert(0, REPO)
from tests._utils.s3_server import MotoServer  # noqa: E402

server = MotoServer().start()
server.client().create_bucket(Bucket="bucket")
key, secret = server.keys["reader"]
with open("aws-credentials", "w") as f:
    f.write(f"[training]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
with open("aws-config", "w") as f:
    f.write(f"[profile training]\nregion = us-east-1\nendpoint_url = {server.endpoint}\n")
os.environ.update(server.env(), AWS_SHARED_CREDENTIALS_FILE=os.path.abspath("aws-credentials"),
                  AWS_CONFIG_FILE=os.path.abspath("aws-config"))

import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from spdl_torch.datasets import ImageFolder, TarShardDataset, write_shards  # noqa: E402

transform = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True)])

# --- docs/shards.md ---
write_shards(ImageFolder("data/imagenet_like/train"), "s3://bucket/train/")  # uploaded as written, the index last
ds = TarShardDataset("s3://bucket/train/", transform=transform)      # its index.json, else its *.tar by name
ds = TarShardDataset(["s3://bucket/train/shard-000000.tar"])          # explicit shards
ds = TarShardDataset("s3://bucket/train/", storage_options={"profile": "training"})  # an AWS profile

# --- what the comments promise: the 48 photos, in the bucket's index and its one shard ---
names = sorted(o["Key"] for o in server.client().list_objects_v2(Bucket="bucket")["Contents"])
print(names)
assert names == ["train/index.json", "train/shard-000000.tar", "train/shard-000000.tar.members.json"]
assert ds.num_samples == 48 and len(list(ds)) == 48
server.stop()
