"""A file server on loopback for download tests, with faults on demand.

It serves one file at ``/model.gguf`` (404 elsewhere), answers Range requests
with 206 unless told to ignore them, and can be told, request by request, to
answer with an error status or to cut the connection after N bytes of body.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATH = "/model.gguf"


@dataclass
class FileServer:
    data: bytes
    honour_range: bool = True
    #: One entry per coming request: an HTTP status to fail with, or None to serve.
    statuses: deque[int | None] = field(default_factory=deque)
    #: One entry per coming request: cut the body after this many bytes, or None.
    cuts: deque[int | None] = field(default_factory=deque)
    #: The Range header of every request received, None where there was none.
    ranges: list[str | None] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        state = self.server.state
        requested = self.headers.get("Range")
        state.ranges.append(requested)
        status = state.statuses.popleft() if state.statuses else None
        cut = state.cuts.popleft() if state.cuts else None
        if self.path != PATH or status is not None:
            self.send_error(status or 404)
            return
        data, start = state.data, 0
        match = re.fullmatch(r"bytes=(\d+)-", requested or "")
        if match is not None and state.honour_range:
            start = int(match[1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # A cut sends fewer bytes than promised and closes: the client sees the
        # connection end early, as when a real transfer is interrupted.
        self.wfile.write(body if cut is None else body[:cut])
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: FileServer


@contextmanager
def serve(state: FileServer) -> Iterator[FileServer]:
    """Serve `state` on 127.0.0.1 in a thread for the duration of the block."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state
    state.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
