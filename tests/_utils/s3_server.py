"""A local S3 server for the object-storage tests and benchmarks: ``moto_server`` (moto[server]) in a process of
its own on a free 127.0.0.1 port, with signature checks on (IAM users with real keys), and a fault proxy in front
of it.

    with MotoServer() as s3:             # users "reader" (s3:*) and "nobody" (no permission), their keys
        s3.client().create_bucket(Bucket="b")
        with S3Proxy(s3.endpoint, delay=0.02, fail_next=3) as proxy:
            proxy.endpoint                # http://127.0.0.1:<port>, signed requests pass through unchanged

``S3Proxy`` faults: ``delay`` seconds before each request is forwarded; ``fail_next=k``: the next k requests answer
503 ``SlowDown`` (S3's throttling answer); ``fail_status``: another status for them (``500``, ``429``);
``drop_next=k``: the next k GETs send half their body, then close the connection; ``slow_body``: seconds to wait
in the middle of each GET body; ``fail_put=k``: the next k upload requests (PUT/POST) answer 503. ``requests``
counts the requests, ``faults`` the faults sent, ``methods`` the requests per method, ``log`` their
``(method, path)``.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request

_FREE_ACTIONS = 5  # the IAM calls below, made before moto starts checking signatures


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_ranges_only() -> None:
    """moto reads an object whole for every ranged GET (then slices it): for the benchmarks' server, a GET with a
    ``Range: bytes=a-b`` header reads only those bytes from moto's buffer (the rest of moto's answer, its signature
    and permission checks, unchanged), as a real server does; the server's CPU is then the request's, not the
    object's."""
    import re
    import threading

    from moto import server
    from moto.s3 import models

    local = threading.local()
    whole = models.FakeKey.value

    class _Window:  # len(): the object's size; a slice inside the range asked for: those bytes
        def __init__(self, key, a: int, b: int) -> None:
            self.size = key.size
            self.a = a
            with key.lock:
                key._value_buffer.seek(a)
                self.data = key._value_buffer.read(b + 1 - a)

        def __len__(self) -> int:
            return self.size

        def __getitem__(self, s: slice) -> bytes:
            return self.data[s.start - self.a:s.stop - self.a]

    def value(self):
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", getattr(local, "range", None) or "")
        if m is None or int(m.group(1)) >= self.size:
            return whole.fget(self)
        return _Window(self, int(m.group(1)), min(int(m.group(2)), self.size - 1))

    models.FakeKey.value = property(value, whole.fset)
    call = server.DomainDispatcherApplication.__call__

    def dispatch(self, environ, start_response):
        local.range = environ.get("HTTP_RANGE") if environ.get("REQUEST_METHOD") == "GET" else None
        try:
            return call(self, environ, start_response)
        finally:
            local.range = None

    server.DomainDispatcherApplication.__call__ = dispatch


class MotoServer:
    """``moto_server`` in a subprocess; ``keys["reader"]`` / ``keys["nobody"]``: ``(access key id, secret)``.
    ``ranged_reads``: a ranged GET reads only its range (see :func:`_read_ranges_only`; the benchmarks)."""

    def __init__(self, timeout: float = 30.0, ranged_reads: bool = False) -> None:
        self.ranged_reads = ranged_reads
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.timeout = timeout
        self.keys: dict[str, tuple[str, str]] = {}
        self._proc: subprocess.Popen | None = None

    def start(self) -> MotoServer:
        exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
        cmd = [*([exe] if os.path.exists(exe) else [sys.executable, "-m", "moto.server"]), "-H", "127.0.0.1", "-p",
               str(self.port)]
        if self.ranged_reads:
            cmd = [sys.executable, "-m", "tests._utils.s3_server", "--moto", str(self.port)]
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_FREE_ACTIONS), MOTO_CALL_RESET_API="false")
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto_server did not start on {self.endpoint}")
                time.sleep(0.05)
        import boto3

        iam = boto3.client("iam", endpoint_url=self.endpoint, aws_access_key_id="setup",
                           aws_secret_access_key="setup", region_name="us-east-1")
        allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.create_user(UserName="reader")
        iam.put_user_policy(UserName="reader", PolicyName="s3", PolicyDocument=json.dumps(allow))
        iam.create_user(UserName="nobody")
        for user in ("reader", "nobody"):  # the last of the free actions, then signatures are checked
            k = iam.create_access_key(UserName=user)["AccessKey"]
            self.keys[user] = (k["AccessKeyId"], k["SecretAccessKey"])
        return self

    def client(self, user: str = "reader", endpoint: str | None = None):
        """A boto3 S3 client (the test's own inspection and set-up: buckets, listings, uploads in progress)."""
        import boto3

        key, secret = self.keys[user]
        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, aws_access_key_id=key,
                            aws_secret_access_key=secret, region_name="us-east-1")

    def env(self, user: str = "reader", endpoint: str | None = None) -> dict[str, str]:
        """The AWS environment of ``user`` for this server (the AWS files pointed away)."""
        key, secret = self.keys[user]
        return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": endpoint or self.endpoint}

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your '
              b'request rate.</Message><RequestId>proxy</RequestId></Error>')
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class S3Proxy:
    """A forwarding proxy to ``upstream`` (a thread of the calling process, or ``main()`` as a process) with faults
    (see the module)."""

    def __init__(self, upstream: str, *, delay: float = 0.0, fail_next: int = 0, fail_status: int = 503,
                 drop_next: int = 0, slow_body: float = 0.0, fail_put: int = 0, port: int = 0) -> None:
        self.upstream = upstream.split("://", 1)[1]
        self.delay, self.fail_next, self.fail_status = delay, fail_next, fail_status
        self.drop_next, self.slow_body, self.fail_put = drop_next, slow_body, fail_put
        self.requests = self.faults = 0
        self.methods: dict[str, int] = {}
        self.log: list[tuple[str, str]] = []  # (method, path) of every request, in arrival order
        self._lock = threading.Lock()
        self._local = threading.local()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                outer._forward(self)

            do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

        self._httpd = _Server(("127.0.0.1", port), Handler)
        self.port = self._httpd.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="s3-proxy", daemon=True)

    def _take(self, name: str) -> bool:
        with self._lock:
            if getattr(self, name) > 0:
                setattr(self, name, getattr(self, name) - 1)
                self.faults += 1
                return True
            return False

    def _conn(self) -> http.client.HTTPConnection:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = http.client.HTTPConnection(self.upstream, timeout=60)
        return c

    def _forward(self, h: http.server.BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests += 1
            self.methods[h.command] = self.methods.get(h.command, 0) + 1
            self.log.append((h.command, h.path.split("?", 1)[0]))
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        if self.delay:
            time.sleep(self.delay)
        if self._take("fail_next") or (h.command in ("PUT", "POST") and self._take("fail_put")):
            payload = _SLOW_DOWN if self.fail_status == 503 else b""
            h.send_response(self.fail_status)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
        for attempt in range(2):  # a pooled upstream connection may have been closed by the server
            conn = self._conn()
            try:
                conn.request(h.command, h.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        h.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in _HOP and k.lower() != "content-length":
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command == "HEAD":
            return
        if h.command == "GET" and len(data) > 1 and self._take("drop_next"):
            h.wfile.write(data[:len(data) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.slow_body and h.command == "GET" and len(data) > 1:
            h.wfile.write(data[:len(data) // 2])
            h.wfile.flush()
            time.sleep(self.slow_body)
            data = data[len(data) // 2:]
        try:
            h.wfile.write(data)
        except OSError:
            h.close_connection = True

    def __enter__(self) -> S3Proxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()



def upload_dir(s3, local_dir, prefix, names=None):
    """The files ``names`` (default: every file) of ``local_dir`` put under ``s3://<bucket>/<prefix>`` with boto3
    (independent of the code under test); returns the URL of the prefix."""
    client = s3.client()
    for name in names if names is not None else sorted(os.listdir(local_dir)):
        path = os.path.join(local_dir, name)
        if os.path.isfile(path):
            client.upload_file(path, s3.bucket, f"{prefix}{name}")
    return f"s3://{s3.bucket}/{prefix}"

def main() -> None:
    """``python -m tests._utils.s3_server [--delay S] [--whole-reads]``: a moto server (ranged GETs reading
    only their range unless ``--whole-reads``) and, with a delay, a proxy in front of it, in this process' child and
    threads, until killed; prints one JSON line: the endpoint to use, moto's and the reader's keys."""
    import argparse
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the moto child is stopped on the way out
    p = argparse.ArgumentParser()
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--whole-reads", action="store_true", help="moto as it is: every ranged GET reads the object")
    p.add_argument("--moto", type=int, help="(internal) run moto itself on this port, ranged GETs reading their range")
    args = p.parse_args()
    if args.moto:
        _read_ranges_only()
        from moto.server import main as moto_main

        moto_main(["-H", "127.0.0.1", "-p", str(args.moto)])
        return
    with MotoServer(ranged_reads=not args.whole_reads) as s3:
        key, secret = s3.keys["reader"]
        if args.delay:
            with S3Proxy(s3.endpoint, delay=args.delay) as proxy:
                print(json.dumps({"endpoint": proxy.endpoint, "moto": s3.endpoint, "key": key, "secret": secret}),
                      flush=True)
                threading.Event().wait()
        print(json.dumps({"endpoint": s3.endpoint, "moto": s3.endpoint, "key": key, "secret": secret}), flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
