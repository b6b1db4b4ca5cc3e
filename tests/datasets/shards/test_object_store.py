"""Shards in object storage (``s3://``) read and written through obstore against a real S3-protocol server: moto
in a subprocess (one per test run, signatures checked), faults from a proxy in front of it. The reference is the
same shards read from local disk and Python's ``tarfile``; shards are put in the bucket with boto3 (not the code
under test) unless ``write_shards`` is what is tested."""

import contextlib
import os
import subprocess
import sys
import tarfile

import pytest

import spdl_torch
from spdl_torch import DecodeError
from spdl_torch.datasets import TarShardDataset, write_shards
from spdl_torch.datasets.shards import RetryPolicy
from spdl_torch.datasets.shards._sources import expand_braces

from tests._utils.s3_server import S3Proxy, upload_dir
from tests._utils.shards import make_samples

FAST = RetryPolicy(attempts=6, timeout=5.0, backoff=0.001, max_backoff=0.01)


@contextlib.contextmanager
def _through(s3, **faults):
    """A fault proxy in front of the server, the AWS environment's endpoint pointed at it meanwhile."""
    with S3Proxy(s3.endpoint, **faults) as proxy:
        before = os.environ["AWS_ENDPOINT_URL"]
        os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
        try:
            yield proxy
        finally:
            os.environ["AWS_ENDPOINT_URL"] = before


def _samples(ds):
    return [(o["__index__"], o["__key__"], bytes(o["bin"].numpy())) for o in ds]


def _tar_keys(paths):
    """The sample keys of the shards, in order, by Python's tarfile."""
    keys = []
    for p in paths:
        with tarfile.open(p) as t:
            for m in t.getmembers():
                k = m.name.rsplit("/", 1)[0] + "/" + m.name.rsplit("/", 1)[1].split(".", 1)[0]
                if not keys or keys[-1] != k:
                    keys.append(k)
    return keys


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_prefix_with_an_index_reads_as_the_local_shards(s3, s3_shards, shuffle):
    d, paths, _ = s3_shards
    url = f"s3://{s3.bucket}/indexed/"
    local = TarShardDataset(os.path.join(d, "index.json"), shuffle=shuffle, shuffle_buffer=17, seed=3)
    ds = TarShardDataset(url, shuffle=shuffle, shuffle_buffer=17, seed=3, retry=FAST, chunk_size=8192)
    assert ds.shards.names == [f"{url}{os.path.basename(p)}" for p in paths]
    assert type(ds.shards.cursor(0)).__name__ == "StreamTableCursor"  # the member tables from the bucket
    got = _samples(ds)
    assert got == _samples(local)
    if not shuffle:
        assert [k for _, k, _ in got] == _tar_keys(paths)


def test_a_prefix_without_an_index_lists_its_tars_by_name(s3, s3_shards):
    d, paths, samples = s3_shards  # raw/: the tars put in reverse order, a README, a nested tar (not listed)
    ds = TarShardDataset(f"s3://{s3.bucket}/raw/", shuffle=False, retry=FAST, chunk_size=16384)
    assert ds.shards.names == [f"s3://{s3.bucket}/raw/{os.path.basename(p)}" for p in paths]
    assert ds.shards.sizes == [os.path.getsize(p) for p in paths]  # from the listing
    assert [k for _, k, _ in _samples(ds)] == _tar_keys(paths) == [k for k, _ in samples]


def test_brace_patterns_expand_as_bash_does():
    for pattern in ["shard-{000000..000012}.tar", "s3://b/p/{a,b,c}-{1..3}.tar", "x{9..11}y", "{10..1..3}",
                    "d/{x,{1..2}}.tgz", "plain.tar", "odd{}.tar", "{a}.tar", "s-{07..10}.tar"]:
        bash = subprocess.run(["bash", "-c", f"printf '%s\\n' {pattern}"], capture_output=True, text=True,
                              check=True).stdout.split()
        assert expand_braces(pattern) == bash, pattern


def test_brace_patterns_name_object_local_and_http_shards(s3, s3_shards):
    from tests._utils.range_server import RangeServer

    d, paths, samples = s3_shards
    url = f"s3://{s3.bucket}/raw/"
    pattern = "shard-{000001..000002}.tar"  # the second and third shards
    want = _tar_keys(paths[1:3])
    for source in (url + pattern, os.path.join(d, pattern)):
        ds = TarShardDataset(source, shuffle=False, retry=FAST)
        assert ds.shards.names == [source.replace(pattern, os.path.basename(p)) for p in paths[1:3]]
        assert [k for _, k, _ in _samples(ds)] == want
    with RangeServer(d) as srv:
        ds = TarShardDataset([srv.url(pattern)], shuffle=False, retry=FAST)
        assert [k for _, k, _ in _samples(ds)] == want


def _rank_run(source, world, threads, **kw):
    out = []
    for rank in range(world):
        ds = TarShardDataset(source, rank=rank, world_size=world, shuffle=True, shuffle_buffer=13, seed=7,
                             retry=FAST, chunk_size=8192, **kw)
        loader = spdl_torch.DataLoader(ds, batch_size=None, num_workers=threads)
        out.append(sorted(o["__index__"] for o in loader))
    return out


def test_exactly_once_over_two_ranks_and_two_threads(s3, s3_shards):
    d, _, samples = s3_shards
    url = f"s3://{s3.bucket}/indexed/"
    remote = _rank_run(url, 2, 2)
    assert remote == _rank_run(os.path.join(d, "index.json"), 2, 2)  # the same split as local shards
    assert sorted(remote[0] + remote[1]) == list(range(len(samples)))  # 160 samples: 80 each, none twice


def _resume_run(source):
    """Two ranks consume 20 and 30 samples, then three ranks resume from merge_states: (consumed, resumed)."""
    seen, states = [], []
    for rank in range(2):
        ds = TarShardDataset(source, rank=rank, world_size=2, shuffle=True, shuffle_buffer=13, seed=7, retry=FAST)
        loader = spdl_torch.DataLoader(ds, batch_size=None, num_workers=2)
        it = iter(loader)
        seen += [next(it)["__index__"] for _ in range(20 + 10 * rank)]
        states.append(loader.state_dict())
        del it
    merged = TarShardDataset.merge_states(states)
    rest = []
    for rank in range(3):
        ds = TarShardDataset(source, rank=rank, world_size=3, shuffle=True, shuffle_buffer=13, seed=7, retry=FAST)
        ds.load_state_dict(merged)
        rest += [o["__index__"] for o in spdl_torch.DataLoader(ds, batch_size=None, num_workers=1)]
    return seen, rest


def test_resume_across_world_sizes(s3, s3_shards):
    d, _, samples = s3_shards
    seen, rest = _resume_run(f"s3://{s3.bucket}/indexed/")
    assert (seen, rest) == _resume_run(os.path.join(d, "index.json"))  # what local shards deliver, in order
    assert sorted(set(seen + rest)) == list(range(len(samples)))  # every sample: 50 consumed, 110 remaining
    assert len(rest) == 111  # 37 per rank: one padding repeat, as DistributedSampler pads


@pytest.mark.parametrize("fault", [dict(fail_next=4), pytest.param(dict(fail_next=3, fail_status=500),
                                                                   marks=pytest.mark.slow),
                                   dict(fail_next=3, fail_status=429), dict(drop_next=3)])
def test_faults_are_retried_and_nothing_is_lost(s3, s3_shards, fault):
    d, _, samples = s3_shards
    url = f"s3://{s3.bucket}/indexed/"
    local = _samples(TarShardDataset(os.path.join(d, "index.json"), shuffle=False))
    with _through(s3, **fault) as proxy:
        ds = TarShardDataset(url, shuffle=False, retry=FAST, chunk_size=8192)
        assert _samples(ds) == local
        assert proxy.faults == fault.get("fail_next", 0) + fault.get("drop_next", 0)  # the faults were served


def test_a_slow_server_times_out_then_the_error_names_the_url(s3, s3_shards):
    d, paths, _ = s3_shards
    url = f"s3://{s3.bucket}/raw/{os.path.basename(paths[0])}"
    with _through(s3, slow_body=0.5) as proxy:
        with pytest.raises(OSError, match=rf"{url}: bytes 0-\d+: failed after 2 attempts: TimeoutError"):
            TarShardDataset([url], retry=RetryPolicy(attempts=2, timeout=0.2, backoff=0.001))
        proxy.slow_body = 0.05  # slow, within the timeout
        ds = TarShardDataset([url], shuffle=False, retry=RetryPolicy(attempts=2, timeout=5.0), chunk_size=1 << 20)
        assert [k for _, k, _ in _samples(ds)] == _tar_keys(paths[:1])


def test_the_stores_own_timeout_is_a_timeout_error(s3, s3_shards):
    """The store's HTTP client times a request out with the policy's timeout too, and either may fire first: its
    timeout is a ``TimeoutError`` naming the URL (retried as one), as the caller's is, never a ``ConnectionError``."""
    import asyncio

    from spdl_torch.datasets.shards._object_store import ObjectStoreFetch

    d, paths, _ = s3_shards
    url = f"s3://{s3.bucket}/raw/{os.path.basename(paths[0])}"
    with _through(s3, slow_body=0.5):
        fetch = ObjectStoreFetch(timeout=0.2)  # the client's timeout alone: no caller's wait_for around it
        with pytest.raises(TimeoutError, match=rf"^{url}: .*\(timed out\)$") as got:
            asyncio.run(fetch(url, 0, 1 << 20))
    assert not isinstance(got.value, ConnectionError)


def test_reads_are_ranges_of_chunk_size(s3, s3_shards, monkeypatch):
    """No object is fetched whole: every request asks for at most chunk_size bytes (the proxy sees the Range
    headers)."""
    d, paths, samples = s3_shards
    url = f"s3://{s3.bucket}/indexed/"
    asked = []
    forward = S3Proxy._forward

    def spy(self, h):
        if h.command == "GET" and ".tar" in h.path and not h.path.endswith(".json"):
            asked.append(h.headers.get("Range"))
        return forward(self, h)

    monkeypatch.setattr(S3Proxy, "_forward", spy)
    with _through(s3):
        ds = TarShardDataset(url, shuffle=False, retry=FAST, chunk_size=4096)
        assert len(_samples(ds)) == len(samples)
    lengths = [int(b) - int(a) + 1 for a, b in (r[len("bytes="):].split("-") for r in asked)]
    assert len(asked) > len(paths) and max(lengths) <= 4096


def test_a_damaged_object_is_skipped_as_the_same_local_file(s3, tmp_path):
    samples = make_samples(60)
    paths = write_shards(samples, tmp_path / "gz", shard_size=40_000, gzip=True)
    with open(paths[1], "r+b") as f:
        f.truncate(os.path.getsize(paths[1]) // 2)
    url = upload_dir(s3, tmp_path / "gz", "damaged/", [os.path.basename(p) for p in paths] + ["index.json"])
    local = TarShardDataset(os.path.join(tmp_path / "gz", "index.json"), shuffle=False, on_error="skip")
    remote = TarShardDataset(url, shuffle=False, on_error="skip", retry=FAST)
    with pytest.warns(RuntimeWarning):
        want = [o["__key__"] for o in local]
    with pytest.warns(RuntimeWarning, match=rf"s3://{s3.bucket}/damaged/shard-000001\.tar\.gz"):
        got = [o["__key__"] for o in remote]
    assert got == want and len(remote.skipped) == len(local.skipped) == len(samples) - len(want) > 0
    with pytest.raises(DecodeError, match=r"shard-000001\.tar\.gz: sample '.*', member '.*': truncated"):
        list(TarShardDataset(url, shuffle=False, retry=FAST))


def test_a_missing_bucket_or_key_is_an_error_naming_the_url(s3, s3_shards):
    missing = "s3://no-such-bucket-here/p/"
    with pytest.raises(OSError, match=rf"cannot list {missing}: FetchStatusError: {missing}: HTTP 404: NoSuchBucket"):
        TarShardDataset(missing, retry=FAST)
    url = f"s3://{s3.bucket}/raw/shard-999999.tar"
    with pytest.raises(OSError, match=rf"{url}: bytes 0-\d+: {url}: HTTP 404: NoSuchKey"):
        TarShardDataset([url], retry=FAST)
    with pytest.raises(OSError, match=rf"s3://{s3.bucket}/q/index.json: .*HTTP 404: NoSuchKey"):
        TarShardDataset(f"s3://{s3.bucket}/q/index.json", retry=FAST)
    with pytest.raises(ValueError, match=rf"s3://{s3.bucket}/empty/: no index.json, \*.tar or \*.tar.gz"):
        TarShardDataset(f"s3://{s3.bucket}/empty/", retry=FAST)


@pytest.mark.parametrize("who", ["nobody", "wrong secret", "unknown key"])
def test_denied_access_names_the_url_and_the_code_never_a_secret(s3, s3_shards, monkeypatch, who):
    url = f"s3://{s3.bucket}/indexed/"
    key, secret = s3.keys["reader"]
    if who == "nobody":  # a real user without permission
        key, secret = s3.keys["nobody"]
        code = "AccessDenied"
    elif who == "wrong secret":
        secret = "x" * 40
        code = "SignatureDoesNotMatch"
    else:
        key = "AKIA" + "Z" * 16
        code = "InvalidAccessKeyId"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    with pytest.raises(OSError, match=rf"{url}.*HTTP 403: {code}") as e:
        TarShardDataset(url + "index.json", retry=FAST)
    text = "".join(__import__("traceback").format_exception(e.value))
    assert secret not in text and key not in text


def test_credentials_from_the_aws_files_and_storage_options(s3, s3_shards, tmp_path, monkeypatch):
    d, _, samples = s3_shards
    url = f"s3://{s3.bucket}/indexed/"
    key, secret = s3.keys["reader"]
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(k)
    (tmp_path / "credentials").write_text(f"[train]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n"
                                          "[default]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = no\n")
    (tmp_path / "config").write_text(f"[profile train]\nregion = us-east-1\nendpoint_url = {s3.endpoint}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "train")
    assert len(list(TarShardDataset(url, shuffle=False, retry=FAST))) == len(samples)
    monkeypatch.setenv("AWS_PROFILE", "default")  # its keys are wrong; the endpoint is the profile's only
    with pytest.raises(OSError, match="HTTP 403: InvalidAccessKeyId"):
        TarShardDataset(url, retry=FAST, storage_options={"endpoint": s3.endpoint})
    options = {"aws_access_key_id": key, "aws_secret_access_key": secret, "endpoint": s3.endpoint}
    ds = TarShardDataset(url, shuffle=False, retry=FAST, storage_options=options)  # options over the files
    assert len(list(ds)) == len(samples)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)  # the environment over the files of AWS_PROFILE
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    assert len(TarShardDataset(url, retry=FAST, storage_options={"endpoint": s3.endpoint}).shards.names) > 0
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA" + "Q" * 16)  # a profile named in storage_options: its keys
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    assert len(TarShardDataset(url, retry=FAST, storage_options={"profile": "train"}).shards.names) > 0
    with pytest.raises(OSError, match="HTTP 403: InvalidAccessKeyId"):  # the env's wrong keys otherwise
        TarShardDataset(url, retry=FAST, storage_options={"endpoint": s3.endpoint})
    with pytest.raises(TypeError, match="storage_options should be a dict"):
        TarShardDataset(url, storage_options="region=us-east-1")


def test_without_obstore_an_object_url_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "obstore", None)
    with pytest.raises(ImportError, match=r"s3://b/p/index.json: .*needs obstore: pip install 'spdl_torch\[cloud\]'"):
        TarShardDataset("s3://b/p/index.json")
    with pytest.raises(ImportError, match=r"spdl_torch\[cloud\]"):
        write_shards(make_samples(3), "s3://b/p/")


def test_an_http_prefix_cannot_be_listed():
    with pytest.raises(ValueError, match=r"http://h/p/ is an http\(s\) prefix: a web server cannot be listed"):
        TarShardDataset("http://h/p/")


def test_a_local_directory_reads_its_index_or_its_tars(shard_dir, tmp_path):
    d, paths, samples = shard_dir
    assert TarShardDataset(str(d), shuffle=False).shards.tables[0] is not None  # its index.json
    for p in paths[:2]:
        os.link(p, tmp_path / os.path.basename(p))
    ds = TarShardDataset(tmp_path, shuffle=False)
    assert ds.shards.names == [str(tmp_path / os.path.basename(p)) for p in paths[:2]]
    assert [o["__key__"] for o in ds] == _tar_keys(paths[:2])


# -- write_shards to a bucket --------------------------------------------------------------------------------
def _objects(s3, prefix):
    got = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"][len(prefix):] for o in got)


def _uploads(s3):
    return [u["Key"] for u in s3.client().list_multipart_uploads(Bucket=s3.bucket).get("Uploads", [])]


@pytest.mark.parametrize("gzip", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_write_shards_to_a_bucket_writes_the_local_bytes(s3, tmp_path, gzip):
    samples = make_samples(40, seed=1)
    out = f"out{int(gzip)}/"
    local = write_shards(samples, tmp_path / "local", shard_size=40_000, gzip=gzip)
    with _through(s3) as proxy:
        urls = write_shards(samples, f"s3://{s3.bucket}/{out}", shard_size=40_000, gzip=gzip)
        order = [(m, p) for m, p in proxy.log if m in ("PUT", "POST") or ".partial" not in p]
    assert urls == [f"s3://{s3.bucket}/{out}{os.path.basename(p)}" for p in local]
    names = sorted(os.listdir(tmp_path / "local"))
    assert _objects(s3, out) == names and _uploads(s3) == []  # no temporary object, no upload left
    client = s3.client()
    for n in names:  # byte for byte what the local write wrote
        body = client.get_object(Bucket=s3.bucket, Key=f"{out}{n}")["Body"].read()
        assert body == open(tmp_path / "local" / n, "rb").read(), n
    finals = [p.rsplit("/", 1)[-1] for m, p in order if m == "PUT" and ".partial" not in p]
    assert finals[-1] == "index.json" and sorted(finals) == names  # every final name once, the index last
    ds = TarShardDataset(f"s3://{s3.bucket}/{out}", shuffle=False, retry=FAST)
    assert [o["__key__"] for o in ds] == [k for k, _ in samples]


def test_a_failed_write_leaves_no_object(s3):
    samples = make_samples(40, seed=2)

    def failing():
        for i, s in enumerate(samples):
            if i == 30:
                raise RuntimeError("the source failed")
            yield s

    with pytest.raises(RuntimeError, match="the source failed"):
        write_shards(failing(), f"s3://{s3.bucket}/broken/", shard_size=40_000)
    assert _objects(s3, "broken/") == [] and _uploads(s3) == []
    with _through(s3, fail_put=1000) as proxy:  # the store refuses every upload
        with pytest.raises(OSError, match=rf"s3://{s3.bucket}/refused/\.shard-000000\.tar\.\d+\.partial.*HTTP 503"):
            write_shards(samples, f"s3://{s3.bucket}/refused/", shard_size=40_000)
        tries = [m for m, path in proxy.log if path.endswith(".partial")]
        assert tries == ["PUT"] * 5  # the first shard (one part: one request) tried 5 times, then the call failed
    assert _objects(s3, "refused/") == [] and _uploads(s3) == []
    with pytest.raises(OSError, match=r"s3://no-such-bucket-w/x/.*HTTP 404: NoSuchBucket"):
        write_shards(samples, "s3://no-such-bucket-w/x/", shard_size=40_000)
    with pytest.raises(ValueError, match="shard_size <= 5 GiB"):
        write_shards(samples, f"s3://{s3.bucket}/x/", shard_size=6 << 30)


@pytest.mark.slow  # ~2 s: 12 MB through moto
def test_a_large_shard_is_a_multipart_upload_and_an_aborted_one_leaves_nothing(s3, tmp_path):
    import random

    rng = random.Random(0)
    samples = [(f"s{i:03d}", {"bin": rng.randbytes(1 << 20)}) for i in range(12)]
    local = write_shards(samples, tmp_path, shard_size=1 << 30)
    with _through(s3) as proxy:
        write_shards(samples, f"s3://{s3.bucket}/big/", shard_size=1 << 30)
        posts = proxy.methods.get("POST", 0)
    assert posts >= 2  # CreateMultipartUpload and CompleteMultipartUpload
    body = s3.client().get_object(Bucket=s3.bucket, Key="big/shard-000000.tar")["Body"].read()
    assert body == open(local[0], "rb").read()

    def failing():
        yield from samples
        raise RuntimeError("late failure")

    with pytest.raises(RuntimeError, match="late failure"):  # parts uploaded, then the source fails
        write_shards(failing(), f"s3://{s3.bucket}/big2/", shard_size=1 << 30)
    assert _objects(s3, "big2/") == [] and _uploads(s3) == []


def test_gcs_and_azure_urls_make_their_stores():
    """gs:// and az:// / abfs[s]:// go to obstore's GCS and Azure stores with the settings given (the stores are
    made here, no request is sent: no GCS or Azure server is tested)."""
    pytest.importorskip("obstore")
    from spdl_torch.datasets.shards._object_store import ObjectStoreFetch, split_url

    fetch = ObjectStoreFetch({"skip_signature": True, "account_name": "acct"})
    store, key = fetch.store("az://container/train/shard-000000.tar")
    assert type(store).__name__ == "AzureStore" and key == "train/shard-000000.tar"
    assert "container" in repr(store) and "acct" in repr(store)
    store, key = ObjectStoreFetch({"skip_signature": True}).store("gs://bkt/a/b.tar")
    assert type(store).__name__ == "GCSStore" and "bkt" in repr(store) and key == "a/b.tar"
    store, key = ObjectStoreFetch({"skip_signature": True}).store("abfss://c@acct.dfs.core.windows.net/x.tar")
    assert type(store).__name__ == "AzureStore" and key == "x.tar"
    assert split_url("s3://b/p/q.tar") == ("s3", "b", "p/q.tar")
    with pytest.raises(ValueError, match="is not an object URL"):
        split_url("s3:///key")
    with pytest.raises(ValueError, match=r"gs://bkt/a: the store cannot be configured: .*no_such_key"):
        ObjectStoreFetch({"no_such_key": 1}).store("gs://bkt/a")


def test_a_pickled_dataset_reads_the_same_samples(s3, s3_shards):
    """What spawn and forkserver workers get: the settings, not the parent's stores."""
    import pickle

    ds = TarShardDataset(f"s3://{s3.bucket}/indexed/", shuffle=True, shuffle_buffer=13, seed=2, retry=FAST)
    first = [o["__key__"] for o in ds]
    assert [o["__key__"] for o in pickle.loads(pickle.dumps(ds))] == first


@pytest.mark.slow  # ~5 s: a forked worker process
def test_forked_workers_are_told_to_use_forkserver(s3, s3_shards):
    """obstore does not survive fork (its threads stay in the parent): torch's DataLoader forking its workers after
    the parent read the index gets an error naming the fix, not a hang."""
    import torch

    ds = TarShardDataset(f"s3://{s3.bucket}/indexed/", retry=FAST)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1, multiprocessing_context="fork")
    with pytest.raises(OSError, match=r"forked after its parent read object storage.*multiprocessing_context="
                                      r"'forkserver'"):
        list(loader)


@pytest.mark.slow  # ~30 s on 2 busy cores: two forkserver workers import torch
def test_forkserver_workers_read_from_a_bucket(s3, s3_shards):
    import torch

    _, _, samples = s3_shards
    ds = TarShardDataset(f"s3://{s3.bucket}/indexed/", shuffle=True, shuffle_buffer=13, seed=2, retry=FAST)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="forkserver")
    assert sorted(o["__key__"] for o in loader) == sorted(k for k, _ in samples)


def test_a_list_of_shards_refuses_an_index_a_prefix_and_non_paths():
    with pytest.raises(ValueError, match=r"'s3://b/p/index.json' in a list of shards: an index or a prefix is given "
                                         "alone"):
        TarShardDataset(["s3://b/p/a.tar", "s3://b/p/index.json"])
    with pytest.raises(ValueError, match=r"'s3://b/q/' in a list of shards"):
        TarShardDataset(["s3://b/q/"])
    with pytest.raises(TypeError, match="a source should be a path or a URL, got int"):
        TarShardDataset(["a.tar", 3])
    with pytest.raises(TypeError, match="sources should be a path, a URL or a list of them, got dict"):
        TarShardDataset({"a": "b"})
    with pytest.raises(ValueError, match="expands to over 10 million names"):
        TarShardDataset("s-{0..9999}-{0..9999}.tar")
