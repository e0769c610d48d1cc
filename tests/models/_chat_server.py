"""A scriptable chat-completions server on loopback, for backend tests.

Each test queues the replies it wants (status, JSON or raw body, headers,
delay, or a `Stream` of server-sent events) and afterwards reads what the
client actually sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `body` is sent as JSON unless it is bytes."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Stream:
    """A streamed answer: each bytes item is sent as one chunk of a chunked body
    (`sse` builds one event), each float is a pause in seconds. With `cut`, the
    connection is closed without ending the body, as a dropped connection does."""

    items: list[bytes | float]
    status: int = 200
    cut: bool = False


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; `data` is sent as JSON unless it is str."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {text}\n\n".encode()


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def completion(
    content: str | None = None,
    *,
    tool_calls: list[Any] | None = None,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
) -> dict[str, Any]:
    """A chat.completion body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


_UNSCRIPTED = Reply(500, error_body("test server: no reply queued", "server_error"))


class ChatServer:
    """Serves queued replies on 127.0.0.1 at an ephemeral port.

    When the queue is empty, `fallback` answers (a 500 unless set), so a
    client that sends more requests than the test expected fails loudly.
    """

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.fallback: Reply = _UNSCRIPTED
        self._replies: deque[Reply | Stream] = deque()
        self._lock = threading.Lock()
        # Set on stop so that replies sleeping out a delay end at once.
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        # A short poll interval keeps shutdown, and so each test's teardown, quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply | Stream | dict[str, Any]) -> None:
        """Queue replies; a plain dict is a 200 with that JSON body."""
        with self._lock:
            for reply in replies:
                self._replies.append(
                    reply if isinstance(reply, Reply | Stream) else Reply(body=reply)
                )

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, received: Received) -> Reply | Stream:
        with self._lock:
            self.requests.append(received)
            return self._replies.popleft() if self._replies else self.fallback

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received = Received(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length),
                    at=time.monotonic(),
                )
                reply = server._next(received)
                if isinstance(reply, Stream):
                    self._stream(reply)
                    return
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                if isinstance(reply.body, bytes):
                    payload, kind = reply.body, "text/plain"
                else:
                    payload, kind = json.dumps(reply.body).encode(), "application/json"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up first (a timeout test); nothing to answer.
                    pass

            def _stream(self, reply: Stream) -> None:
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for item in reply.items:
                        if isinstance(item, float):
                            if server._stopping.wait(item):
                                break
                            continue
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item))
                        self.wfile.flush()
                    if reply.cut or server._stopping.is_set():
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
