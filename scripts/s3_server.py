"""An S3 server on 127.0.0.1 for tests and benchmarks: moto's S3 emulator behind a front that counts requests.

    python scripts/s3_server.py [--port 0] [--delay 0.02]

Prints `s3_server: http://127.0.0.1:PORT` on its first line of stdout once it accepts connections, then serves
until stdin closes (so it ends with the process that started it, however that one ends) or SIGTERM.

moto is an emulator of S3's API, not an object store: request counts and correctness rest on it, latency does not.
The front (a WSGI middleware in the same process) classifies every S3 request as LIST, HEAD, GET, PUT, DELETE, COPY
or OTHER (bucket sub-resources), keeps them in order, and sleeps `--delay` seconds before serving each one (a real
store's per-request latency, for benchmarks). Its own endpoints, under `/_sargable/` (no bucket name starts with
`_`): `GET /_sargable/requests?since=N` returns the requests from the N-th on as JSON
`[{"kind", "method", "path", "query"}, ...]` (path percent-encoded as sent), `GET /_sargable/count` how many there
were so far; `POST /_sargable/delay?seconds=S` sets the delay.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

LIST, HEAD, GET, PUT, DELETE, COPY, OTHER = "LIST", "HEAD", "GET", "PUT", "DELETE", "COPY", "OTHER"
_LIST_PARAMS = {"list-type", "prefix", "delimiter", "marker", "continuation-token", "uploads", "max-keys"}


def classify(method: str, path: str, query: dict[str, list[str]], copy_source: bool) -> str:
    """The kind of one path-style S3 request (`/bucket/key?query`)."""
    key = path.lstrip("/").partition("/")[2]
    if method == "HEAD":
        return HEAD
    if method == "GET":
        if key:
            return GET
        return LIST if not query or _LIST_PARAMS & set(query) else OTHER
    if method == "PUT":
        return COPY if copy_source else PUT
    if method == "POST":
        if "delete" in query:
            return DELETE
        return PUT if "uploads" in query or "uploadId" in query else OTHER
    if method == "DELETE":
        return DELETE
    return OTHER


class CountingFront:
    """WSGI middleware: records and delays each S3 request, serves `/_sargable/` itself."""

    def __init__(self, app: Callable[..., Any], delay: float = 0.0) -> None:
        self.app = app
        self.delay = delay
        self.requests: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if path.startswith("/_sargable/"):
            return self._own(environ["REQUEST_METHOD"], path, query, start_response)
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or path
        entry = {
            "kind": classify(environ["REQUEST_METHOD"], path, query, "HTTP_X_AMZ_COPY_SOURCE" in environ),
            "method": environ["REQUEST_METHOD"],
            "path": raw.partition("?")[0],
            "query": environ.get("QUERY_STRING", ""),
        }
        with self.lock:
            self.requests.append(entry)
            delay = self.delay
        if delay:
            time.sleep(delay)
        return self.app(environ, start_response)

    def _own(
        self, method: str, path: str, query: dict[str, list[str]], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if path == "/_sargable/requests" and method == "GET":
            since = int(query.get("since", ["0"])[0])
            with self.lock:
                body = json.dumps(self.requests[since:]).encode()
        elif path == "/_sargable/count" and method == "GET":
            with self.lock:
                body = json.dumps(len(self.requests)).encode()
        elif path == "/_sargable/delay" and method == "POST":
            with self.lock:
                self.delay = float(query["seconds"][0])
            body = b"{}"
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"unknown endpoint"]
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds slept before serving each S3 request")
    args = parser.parse_args(argv)

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    os.environ.setdefault("MOTO_PORT", str(args.port))
    app = CountingFront(DomainDispatcherApplication(create_backend_app), args.delay)
    server = make_server(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    host, port = server.server_address[:2]
    print(f"s3_server: http://{host}:{port}", flush=True)

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    def watch_stdin() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        stop()

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
