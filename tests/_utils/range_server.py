"""A local HTTP server with Range support for the remote-read tests and the benchmark: a thread of the calling
process serving one directory on 127.0.0.1, with fault modes.

    with RangeServer(directory, delay=0.02, fail_every=10, drop_every=0, short_every=0) as srv:
        url = srv.url("shard-000000.tar")

``delay``: seconds before every response; ``fail_every=k``: every k-th request (counted per server) answers 503;
``drop_every=k``: every k-th request closes the connection without an answer; ``short_every=k``: every k-th
ranged request sends only half its body (with the full ``Content-Range`` / ``Content-Length``, then closes).
``ignore_range=True``: every GET answers 200 with the whole file, as ``python -m http.server`` does.
``routes={"/path": fn}``: ``fn(handler)`` answers that path itself (forged answers). ``requests`` counts the
requests, ``faults`` the ones that failed on purpose; ``sent[path]`` / ``asked[path]``: body bytes written and
requests per path.
"""

from __future__ import annotations

import http.server
import os
import re
import socketserver
import threading
import time

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class RangeServer:
    def __init__(self, directory: str, *, delay: float = 0.0, fail_every: int = 0, drop_every: int = 0,
                 short_every: int = 0, ignore_range: bool = False, routes: dict | None = None) -> None:
        self.directory = os.fspath(directory)
        self.delay, self.fail_every, self.drop_every, self.short_every = delay, fail_every, drop_every, short_every
        self.requests = 0
        self.faults = 0
        self.bytes_sent = 0  # body bytes of successful range answers
        self.ignore_range, self.routes = ignore_range, dict(routes or {})
        self.sent: dict[str, int] = {}
        self.asked: dict[str, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 10  # a client that stops reading: the handler's writes time out and it ends
            disable_nagle_algorithm = True  # headers and body go out at once (no delayed-ACK stalls)

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                self._serve(head=True)

            def do_GET(self):
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                with outer._lock:
                    outer.requests += 1
                    n = outer.requests
                    outer.asked[self.path] = outer.asked.get(self.path, 0) + 1
                if self.path in outer.routes:
                    outer.routes[self.path](self)
                    return
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.drop_every and n % outer.drop_every == 0:
                    outer._fault()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if outer.fail_every and n % outer.fail_every == 0:
                    outer._fault()
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = os.path.join(outer.directory, self.path.lstrip("/").split("?")[0])
                if not os.path.isfile(path):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                size = os.path.getsize(path)
                m = None if outer.ignore_range else _RANGE.fullmatch(self.headers.get("Range", ""))
                if m is None:
                    start, stop, status = 0, size, 200
                else:
                    start = int(m.group(1))
                    stop = min(size, int(m.group(2)) + 1) if m.group(2) else size
                    status = 206
                    if start >= size:
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{size}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                with open(path, "rb") as f:
                    f.seek(start)
                    body = f.read(stop - start)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
                self.end_headers()
                if head:
                    return
                if status == 206 and outer.short_every and n % outer.short_every == 0 and len(body) > 1:
                    outer._fault()
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                for k in range(0, len(body), 1 << 16):  # counted as written (the client may close early)
                    try:
                        self.wfile.write(body[k:k + (1 << 16)])
                    except OSError:
                        self.close_connection = True
                        return
                    with outer._lock:
                        outer.bytes_sent += len(body[k:k + (1 << 16)])
                        outer.sent[self.path] = outer.sent.get(self.path, 0) + len(body[k:k + (1 << 16)])

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="range-server", daemon=True)

    def _fault(self) -> None:
        with self._lock:
            self.faults += 1

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> RangeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def main() -> None:
    """``python -m tests._utils.range_server DIR [--delay S]``: serves DIR until killed; prints the port."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("directory")
    p.add_argument("--delay", type=float, default=0.0)
    args = p.parse_args()
    srv = RangeServer(args.directory, delay=args.delay)
    print(srv.port, flush=True)
    srv._httpd.serve_forever()


if __name__ == "__main__":
    main()
