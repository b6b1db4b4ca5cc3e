"""Object storage (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``) through ``obstore`` (the Rust ``object_store``
crate: async, releases the GIL; chosen by ``benchmarks/bench_object_store.py``): ranged reads, prefix listing and
uploads. ``obstore`` is imported on first use (the ``cloud`` extra); without it an object URL is an ``ImportError``
naming the extra.

Where a store's settings come from, first found wins, per setting:

1. ``storage_options`` (obstore's configuration keys: ``aws_access_key_id``, ``region``, ``endpoint``,
   ``skip_signature``, ...; for GCS and Azure their own keys), and ``profile`` (S3: the profile of the files below,
   whose keys then come before the environment's, as with botocore's ``Session(profile_name=...)``);
2. the environment, read by obstore: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
   ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL`` (``AWS_ENDPOINT_URL_S3``) for S3-compatible stores;
   ``GOOGLE_SERVICE_ACCOUNT`` ...; ``AZURE_STORAGE_ACCOUNT_NAME`` ...;
3. S3: the AWS files (``AWS_SHARED_CREDENTIALS_FILE``, default ``~/.aws/credentials``; ``AWS_CONFIG_FILE``, default
   ``~/.aws/config``), profile ``AWS_PROFILE`` (or ``AWS_DEFAULT_PROFILE``, else ``default``): static keys,
   ``region``, ``endpoint_url``;
4. obstore's own chain (S3: web identity, container credentials, instance metadata).

An ``http://`` endpoint is allowed when it is the endpoint given (a local S3-compatible store). Nothing of a
store's settings comes from an index. Retries are :class:`._remote.RetryPolicy`'s for reads and listings (obstore's
own are off; every request bounded by the policy's timeout) and obstore's own for ``write_shards``' uploads (4
retries with its exponential backoff, 120 s per request).

obstore does not survive ``fork`` (its threads stay in the parent): a process forked after its parent used it gets
a ``RuntimeError`` naming ``multiprocessing_context="forkserver"``; a pickled :class:`ObjectStoreFetch` (spawn,
forkserver) carries its settings only, and makes its stores anew.

Errors name the URL, the HTTP status and the store's error code (``NoSuchBucket``, ``NoSuchKey``, ``AccessDenied``,
``SignatureDoesNotMatch``, ...), never a credential: the message is built from the status and the code, not from the
store's answer (an S3 error body can hold the access key id and the string signed).
"""

from __future__ import annotations

import asyncio
import configparser
import datetime
import os
import re
import threading
from collections.abc import Iterator, Mapping
from queue import Queue
from typing import Any

from ... import _exit
from ._remote import FetchStatusError, _TransientFetchError, error_kind

__all__ = ["OBJECT_SCHEMES", "ObjectStoreFetch", "ObjectUpload", "is_object_url", "require_obstore", "split_url"]

OBJECT_SCHEMES = ("s3", "gs", "az", "abfs", "abfss")
EXTRA = "cloud"

_URL = re.compile(r"(s3|gs|az|abfss?)://([^/?#]*)/?(.*)", re.S)


def is_object_url(source: Any) -> bool:
    return isinstance(source, str) and _URL.match(source) is not None


def split_url(url: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)`` of an object URL (``abfs``: bucket is ``container@account...``).

    Raises:
        ValueError: not an object URL, or one without a bucket.
    """
    m = _URL.fullmatch(url)
    if m is None or not m.group(2):
        raise ValueError(f"{url!r:.200} is not an object URL (s3://bucket/key, gs://bucket/key, az://container/key)")
    return m.group(1), m.group(2), m.group(3)


def require_obstore(url: str) -> Any:
    """The ``obstore`` module.

    Raises:
        ImportError: it is not installed; the message names the URL and the extra.
    """
    try:
        import obstore
    except ImportError:
        raise ImportError(f"{url:.200}: reading or writing {url.split('://', 1)[0]}:// URLs needs obstore: pip install "
                          f"'spdl_torch[{EXTRA}]' (or: pip install obstore)") from None
    return obstore


def _aws_files(profile: str | None) -> dict[str, str]:
    """Static keys, region and endpoint of ``profile`` in the AWS credentials and config files (absent: empty)."""
    profile = profile or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"
    out: dict[str, str] = {}
    cred = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials")
    conf = os.environ.get("AWS_CONFIG_FILE") or os.path.expanduser("~/.aws/config")
    for path, section in ((cred, profile), (conf, profile if profile == "default" else f"profile {profile}")):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except (configparser.Error, OSError, UnicodeDecodeError) as e:
            raise ValueError(f"the AWS file {path} cannot be read: {type(e).__name__}") from None
        if not parser.has_section(section):
            continue
        for key in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "region", "endpoint_url"):
            value = parser.get(section, key, fallback=None)
            if value and key not in out:  # the credentials file first
                out[key] = value.strip()
    return out


_ENV_KEYS = {"aws_access_key_id": "AWS_ACCESS_KEY_ID", "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
             "endpoint_url": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")}
_OPTION_ALIASES = {"aws_access_key_id": ("aws_access_key_id", "access_key_id"),
                   "region": ("region", "aws_region", "default_region", "aws_default_region"),
                   "endpoint_url": ("endpoint", "endpoint_url", "aws_endpoint", "aws_endpoint_url")}


def _given(key: str, options: Mapping[str, Any]) -> bool:
    env = _ENV_KEYS[key]
    return any(k in options for k in _OPTION_ALIASES[key]) or any(os.environ.get(v) for v in
                                                                   ((env,) if isinstance(env, str) else env))


def _s3_settings(options: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The S3 configuration passed to obstore beyond the environment (which obstore reads itself), and the
    endpoint in force (to allow ``http://``)."""
    options = dict(options)
    profile = options.pop("profile", None)
    files = _aws_files(profile)
    config = dict(options)
    keys_given = any(k in options for k in _OPTION_ALIASES["aws_access_key_id"]) or \
        (profile is None and _given("aws_access_key_id", options))  # a profile named here: its keys over the env's
    if not keys_given and "aws_access_key_id" in files:  # keys come as a set
        for k in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
            if k in files:
                config[k] = files[k]
    if not _given("region", options) and "region" in files:
        config["region"] = files["region"]
    if not _given("endpoint_url", options) and "endpoint_url" in files:
        config["endpoint"] = files["endpoint_url"]
    endpoint = next((options[k] for k in _OPTION_ALIASES["endpoint_url"] if k in options), None)
    endpoint = endpoint or next((os.environ[v] for v in _ENV_KEYS["endpoint_url"] if os.environ.get(v)), None)
    return config, endpoint or config.get("endpoint")


def _seconds(t: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=float(t))


def _make_store(scheme: str, bucket: str, options: Mapping[str, Any], timeout: float, retries: int) -> Any:
    obstore = require_obstore(f"{scheme}://{bucket}")
    from obstore.store import AzureStore, GCSStore, S3Store

    client = {"timeout": _seconds(timeout), "connect_timeout": _seconds(min(timeout, 10.0))}
    retry = {"max_retries": int(retries), "retry_timeout": _seconds(max(timeout, 1.0) * (retries + 1)),
             "backoff": {"init_backoff": _seconds(0.05), "max_backoff": _seconds(2.0)}}
    del obstore
    if scheme == "s3":
        config, endpoint = _s3_settings(options)
        if endpoint and str(endpoint).startswith("http://"):
            client["allow_http"] = True
        return S3Store(bucket, client_options=client, retry_config=retry, **config)
    if scheme == "gs":
        return GCSStore(bucket, client_options=client, retry_config=retry, **dict(options))
    from obstore.store import from_url

    if scheme == "az":
        return AzureStore(bucket, client_options=client, retry_config=retry, **dict(options))
    return from_url(f"{scheme}://{bucket}/", client_options=client, retry_config=retry, **dict(options))


_STATUS = re.compile(r"status code: (\d{3})")
# obstore's debug text of a request its HTTP client timed out: ``HttpError { kind: Timeout, ... TimedOut }``
_TIMED_OUT = re.compile(r"kind: Timeout\b|\bTimedOut\b")
_CODE = re.compile(r"<Code>([^<]{1,100})</Code>")
_MESSAGE = re.compile(r"<Message>([^<]{1,300})</Message>")
_HINTS = {
    "NoSuchBucket": "the bucket does not exist",
    "NoSuchKey": "no such object",
    "AccessDenied": "access denied: the credentials in use lack the permission",
    "InvalidAccessKeyId": "the access key id is not known to the store: check the credentials (AWS_ACCESS_KEY_ID, "
                          "the AWS profile, storage_options)",
    "SignatureDoesNotMatch": "the request's signature does not match: check the secret key (AWS_SECRET_ACCESS_KEY, "
                             "the AWS profile, storage_options)",
    "ExpiredToken": "the temporary credentials have expired: renew them",
    "SlowDown": "the store asks to slow down (throttling)",
    "PermanentRedirect": "the bucket is in another region: set AWS_REGION or storage_options={'region': ...}",
    "AuthorizationHeaderMalformed": "the request was signed for another region than the bucket's: set AWS_REGION "
                                    "or storage_options={'region': ...}",
}


def _no_queries(text: str) -> str:
    """``text`` with the query of every URL in it left out (a SAS token or a presigned signature is one)."""
    return re.sub(r"(\w+://[^\s?#]+)[?#]\S*", r"\1?...", text)


class _PastEnd(Exception):
    """A range that starts at or past the end of the object (HTTP 416)."""


class _StoreTimeout(TimeoutError):
    """A request the store's HTTP client timed out: a ``TimeoutError``, as the caller's own timeout is."""


def _classify(url: str, e: BaseException) -> BaseException:
    """An obstore error as the fetch contract's: :class:`FetchStatusError` for a status (4xx: not retried; 5xx,
    408, 429: retried), a ``TimeoutError`` for a request the client timed out, a ``ConnectionError`` for another
    transport failure, :class:`_PastEnd` for 416. The message holds the URL, the status and the store's error
    code and message, nothing else of its answer."""
    from obstore import exceptions as ox

    text = str(e)
    m = _STATUS.search(text)
    status = int(m.group(1)) if m else None
    if status is None:
        status = {ox.NotFoundError: 404, ox.PermissionDeniedError: 403, ox.UnauthenticatedError: 401}.get(type(e))
    if status == 416:
        return _PastEnd()
    code = _CODE.search(text)
    code = code.group(1) if code else None
    if status is None:
        first = _no_queries(text.split("\n", 1)[0])
        if _TIMED_OUT.search(text):  # the client's own timeout (it races the caller's): said as the caller's
            return _StoreTimeout(f"{url}: {type(e).__name__}: {first[:300]} (timed out)")
        return _TransientFetchError(f"{url}: {type(e).__name__}: {first[:300]}")
    message = _MESSAGE.search(text)
    reason = _HINTS.get(code) or (message.group(1) if message else "")
    if code is None and status == 404:
        reason = "not found"
    return FetchStatusError(url, status, f"{code}: {reason}" if code else reason)


# obstore's async calls resolve their Python future from a tokio thread (a thread Python did not start). One that
# takes the GIL while the interpreter finalizes is ended by pthread_exit, whose unwinding through Rust frames aborts
# the process (exit status 134, "Fatal Python error: Aborted": 4 of 15 runs of a plain asyncio.run() script that
# read through obstore right before it ended). Reads here resolve on the shared loop and spdl_torch's exit handler
# joins its threads first, which narrows the window (no abort in 20 runs without this guard); the handler below
# closes it: before finalization it waits for the calls in flight.
_inflight: set[Any] = set()
EXIT_WAIT_S = 2.0
os.register_at_fork(after_in_child=_inflight.clear)  # a forked child has none of its parent's calls


# obstore is not fork-safe: its tokio runtime's threads stay in the process that started them, so in a child forked
# after the parent read through obstore every call waits forever (a new store does not help). Such a child gets an
# error naming the fix instead.
_started_in: int | None = None


def _check_process(url: str) -> None:
    """Raises in a process forked after its parent used obstore.

    Raises:
        RuntimeError: this process was forked after obstore ran in its parent.
    """
    global _started_in
    pid = os.getpid()
    if _started_in is None:
        _started_in = pid
    elif _started_in != pid:
        raise RuntimeError(
            f"{url:.200}: this process was forked after its parent read object storage, and obstore (the client) "
            "does not work across fork (its threads stay in the parent, so every request would wait forever): "
            "start the workers with multiprocessing_context='forkserver' (or 'spawn') in the DataLoader, or load "
            "on threads (spdl_torch.DataLoader with a fused transform)")


def _tracked(awaitable: Any) -> Any:
    """``awaitable`` (an obstore future, on the running loop) counted in flight until it is done."""
    if hasattr(awaitable, "add_done_callback"):
        _inflight.add(awaitable)
        awaitable.add_done_callback(_inflight.discard)
    return awaitable


@_exit.on_close
def _settle() -> None:
    """At exit: waits (at most :data:`EXIT_WAIT_S`) for obstore's calls in flight to be done, then a moment for
    its threads to return from waking the loop, so that none takes the GIL during finalization."""
    import time

    if not _inflight and "obstore" not in __import__("sys").modules:
        return
    deadline = time.monotonic() + EXIT_WAIT_S
    while _inflight and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)


class _Loop:
    """The shared event loop of remote reads (one daemon thread), for the synchronous calls made here."""

    @staticmethod
    def run(coro: Any) -> Any:
        from ._remote import _Loop as Shared

        return asyncio.run_coroutine_threadsafe(coro, Shared.get()).result()


class ObjectStoreFetch:
    """Ranged reads of object URLs (the fetch contract of :mod:`._remote`), listing and the stores of a dataset.

    Args:
        storage_options: settings of every store (see the module); ``None``: the environment and the AWS files.
        timeout: seconds per request.
        retries: obstore's own retries (0 for reads: the caller's :class:`._remote.RetryPolicy` retries).
    """

    def __init__(self, storage_options: Mapping[str, Any] | None = None, *, timeout: float = 30.0,
                 retries: int = 0) -> None:
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise TypeError(f"storage_options: expected a dict of settings, got {type(storage_options).__name__}")
        self.options = dict(storage_options or {})
        self.timeout, self.retries = float(timeout), int(retries)
        self._stores: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:  # pickled for worker processes: the settings, not the stores
        return {"options": self.options, "timeout": self.timeout, "retries": self.retries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], timeout=state["timeout"], retries=state["retries"])

    def store(self, url: str) -> tuple[Any, str]:
        """``(store, key)`` of an object URL; one store per bucket.

        Raises:
            ImportError: obstore is not installed. ValueError: not an object URL; bad settings.
        """
        scheme, bucket, key = split_url(url)
        _check_process(url)
        if self._pid != os.getpid():  # a forked child: its own stores (the parent's hold its connections)
            self._stores, self._lock, self._pid = {}, threading.Lock(), os.getpid()
        with self._lock:
            store = self._stores.get((scheme, bucket))
            if store is None:
                try:
                    store = _make_store(scheme, bucket, self.options, self.timeout, self.retries)
                except ImportError:
                    raise
                except Exception as e:  # noqa: BLE001 -- obstore's configuration errors, said with the URL
                    raise ValueError(f"{url:.200}: the store cannot be configured: {str(e).splitlines()[0][:300]}") \
                        from None
                self._stores[(scheme, bucket)] = store
        return store, key

    async def __call__(self, url: str, start: int, stop: int) -> bytes:
        buf = bytearray(max(0, stop - start))
        n = await self.into(url, start, stop, memoryview(buf))
        del buf[n:]
        return bytes(buf)

    async def into(self, url: str, start: int, stop: int, out: memoryview) -> int:
        """The bytes ``[start, stop)`` of ``url`` written into ``out``; how many there were (fewer at the end of
        the object, 0 past it).

        Raises:
            FetchStatusError: the store answered an error status (the URL, status and error code named).
            ConnectionError: a transport failure (retried by the caller).
        """
        import obstore

        if stop <= start:
            return 0
        store, key = self.store(url)
        try:
            data = await _tracked(obstore.get_range_async(store, key, start=start, end=stop))
        except Exception as e:  # noqa: BLE001 -- classified
            err = _classify(url, e)
            if isinstance(err, _PastEnd):
                return 0
            raise err from None
        n = len(data)
        if n > len(out):
            return n  # the caller retries an answer longer than the range
        out[:n] = memoryview(data)
        return n

    def list(self, url: str, policy: Any = None) -> list[tuple[str, int]]:
        """``(url, size)`` of the objects directly under the prefix ``url`` (ending in ``/``), by name; retried
        as a read is (``policy``: a :class:`._remote.RetryPolicy`).

        Raises:
            OSError: the store answered an error (a missing bucket, denied access), naming the URL.
        """
        import random

        import obstore

        from ._remote import RetryPolicy, _retryable

        policy = policy or RetryPolicy()
        store, key = self.store(url)
        scheme, bucket, _ = split_url(url)
        prefix = key.rstrip("/")

        async def go() -> Any:
            last: BaseException | None = None
            for n in range(1, policy.attempts + 1):
                if n > 1:
                    await asyncio.sleep(policy.delay(n - 1, random.Random()))
                try:
                    return await asyncio.wait_for(_tracked(obstore.list_with_delimiter_async(store, prefix or None)),
                                                  policy.timeout)
                except Exception as e:  # noqa: BLE001 -- classified
                    last = e if isinstance(e, (TimeoutError, asyncio.TimeoutError)) else _classify(url, e)
                    if not _retryable(last):
                        break
            raise OSError(f"TarShardDataset: cannot list {url}: {error_kind(last)}: {last}") from None

        got = _Loop.run(go())
        objects = sorted((o["path"], int(o["size"])) for o in got["objects"])
        return [(f"{scheme}://{bucket}/{path}", size) for path, size in objects]

    # -- uploads -------------------------------------------------------------------------------------
    def upload(self, url: str, part_size: int) -> ObjectUpload:
        return ObjectUpload(self, url, part_size)

    def put(self, url: str, data: bytes) -> None:
        """One object written whole (atomic).

        Raises:
            OSError: the store refused it (the URL named).
        """
        import obstore

        store, key = self.store(url)
        try:
            obstore.put(store, key, bytes(data), use_multipart=False)
        except Exception as e:  # noqa: BLE001 -- classified
            raise OSError(f"write_shards: cannot write {url}: {_classify(url, e)}") from None

    def copy(self, src: str, dst: str) -> None:
        """A server-side copy (``dst`` overwritten) within one bucket.

        Raises:
            OSError: the store refused it.
        """
        import obstore

        store, a = self.store(src)
        _, b = self.store(dst)
        try:
            obstore.copy(store, a, b, overwrite=True)
        except Exception as e:  # noqa: BLE001 -- classified
            raise OSError(f"write_shards: cannot copy {src} to {dst}: {_classify(dst, e)}") from None

    def delete(self, url: str) -> None:
        """Deletes the object (absent: nothing to do).

        Raises:
            OSError: the store refused it.
        """
        import obstore

        store, key = self.store(url)
        try:
            obstore.delete(store, key)
        except FileNotFoundError:
            pass
        except Exception as e:  # noqa: BLE001 -- classified
            raise OSError(f"write_shards: cannot delete {url}: {_classify(url, e)}") from None


_END, _ABORT = object(), object()


class _Aborted(Exception):
    pass


class ObjectUpload:
    """A binary file written as an object: ``write()`` hands parts of ``part_size`` bytes to a multipart upload
    running on a thread of its own (obstore's ``put`` of an iterator); at most two parts wait in memory. An object
    smaller than one part is written with one request at :meth:`close`. :meth:`close` ends the upload (the object appears);
    :meth:`abort` cancels it (a multipart upload is aborted: no object, no parts left).

    Raises (``write``, ``close``):
        OSError: the upload failed (the URL and the store's status named).
    """

    def __init__(self, fetch: ObjectStoreFetch, url: str, part_size: int) -> None:
        self.url, self._part = url, int(part_size)
        self._fetch = fetch
        self._store, self._key = fetch.store(url)
        self._buf = bytearray()
        self._written = 0
        self._queue: Queue = Queue(maxsize=2)
        self._error: BaseException | None = None
        self._closed = False
        self._thread: threading.Thread | None = None  # started with the first whole part

    def _start(self) -> None:
        import obstore

        self._thread = _exit.track(threading.Thread(target=self._run, args=(obstore,), name="spdl_torch-upload",
                                                    daemon=True))
        self._thread.start()

    def _parts(self) -> Iterator[bytes]:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if item is _ABORT:
                raise _Aborted
            yield item

    def _run(self, obstore: Any) -> None:
        try:
            obstore.put(self._store, self._key, self._parts(), chunk_size=self._part, max_concurrency=2)
        except _Aborted:
            pass
        except BaseException as e:  # noqa: BLE001 -- handed to the writer
            self._error = e
            while True:  # unblock a writer waiting on a full queue
                item = self._queue.get()
                if item is _END or item is _ABORT:
                    break

    def _raise(self) -> None:
        if self._error is not None:
            e = self._error
            raise OSError(f"write_shards: the upload of {self.url} failed: {_classify(self.url, e)}") from None

    def _send(self, item: Any) -> None:
        while True:
            self._raise()
            try:
                self._queue.put(item, timeout=0.1)
                return
            except Exception:  # noqa: BLE001 -- queue.Full: the upload is busy; check it did not fail
                if self._thread is None or not self._thread.is_alive():
                    self._raise()
                    return

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data: Any) -> int:
        b = memoryview(data).cast("B")
        self._buf += b
        self._written += len(b)
        while len(self._buf) >= self._part:
            if self._thread is None:
                self._start()
            self._send(bytes(self._buf[:self._part]))
            del self._buf[:self._part]
        return len(b)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        """Ends the upload and waits for it: the object then exists."""
        if self._closed:
            return
        self._closed = True
        if self._thread is None:  # one part at most: one request
            data, self._buf = bytes(self._buf), bytearray()
            self._fetch.put(self.url, data)
            return
        if self._buf:
            self._send(bytes(self._buf))
            self._buf = bytearray()
        self._send(_END)
        self._thread.join()
        self._raise()

    def abort(self) -> None:
        """Cancels the upload (nothing is left under the URL); never raises."""
        if self._closed:
            return
        self._closed = True
        self._buf = bytearray()
        if self._thread is None:
            return
        while self._thread.is_alive():
            try:
                self._queue.put(_ABORT, timeout=0.1)
                break
            except Exception:  # noqa: BLE001 -- queue.Full
                continue
        self._thread.join()
