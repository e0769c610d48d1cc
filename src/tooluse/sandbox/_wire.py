"""What the host and the in-sandbox server say to each other, and how it is written.

Both sides import this module: the host as ``tooluse.sandbox._wire``, the server as a
file beside its own inside the sandbox. So it uses the standard library only and does
nothing when imported.

- The control and hand-over sockets carry frames: a 4-byte big-endian length, then JSON;
  descriptors travel with a frame as ``SCM_RIGHTS``.
- The tool channel is two pipes of JSON lines, calls up one and replies down the other.
  A call is its envelope followed by its arguments, two JSON values on one line, so that
  a call whose arguments cannot be read can still be answered.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import socket
import struct
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["close_all", "decode_message", "json_encoder", "recv_frame", "send_frame"]

_HEADER = struct.Struct("!I")
_MAX_FDS = 8


def send_frame(sock: socket.socket, obj: object, fds: Iterable[int] = ()) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    payload = _HEADER.pack(len(data)) + data
    fd_list = list(fds)
    if not fd_list:
        sock.sendall(payload)
        return
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fd_list))]
    sent = sock.sendmsg([payload], ancillary)
    if sent < len(payload):
        sock.sendall(payload[sent:])


def recv_frame(sock: socket.socket) -> tuple[Any, list[int]] | None:
    """One frame and the descriptors that came with it; None at end of stream."""
    fds: list[int] = []

    def read_exactly(size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            data, new_fds, _flags, _addr = socket.recv_fds(sock, size - len(chunks), _MAX_FDS)
            fds.extend(new_fds)
            if not data:
                return None
            chunks += data
        return bytes(chunks)

    header = read_exactly(_HEADER.size)
    if header is None:
        close_all(fds)
        return None
    (length,) = _HEADER.unpack(header)
    body = read_exactly(length)
    if body is None:
        close_all(fds)
        return None
    return json.loads(body), fds


def close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def json_encoder(
    *,
    separators: tuple[str, str] = (",", ":"),
    default: Callable[[Any], object] | None = None,
    allow_nan: bool = True,
) -> Callable[[object], str]:
    """``json.dumps`` with these options (ASCII output), set up once rather than per call.

    ``json.dumps`` and ``JSONEncoder.encode`` build a new C encoder on every call, which
    costs more than encoding a tool call's arguments. The C encoder's constructor is not
    public API, so where it is missing this falls back to ``JSONEncoder.encode``. There
    is no check for circular references: a cycle raises RecursionError, not ValueError.
    """
    encoder = json.JSONEncoder(
        separators=separators, default=default, check_circular=False, allow_nan=allow_nan
    )
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:
        return encoder.encode
    item_separator, key_separator = separators
    chunks = make_encoder(
        None,
        encoder.default,
        json.encoder.encode_basestring_ascii,
        None,
        key_separator,
        item_separator,
        False,
        False,
        allow_nan,
    )

    def encode(value: object) -> str:
        return "".join(chunks(value, 0))

    return encode


# raw_decode: the lines need no check for surrounding whitespace.
_decode = json.JSONDecoder().raw_decode


def decode_message(line: bytes) -> dict[str, Any] | None:
    """The message on one line of the tool channel, or None if it is not a JSON object.

    A call's arguments become ``args``; arguments that cannot be read (nested too deeply,
    an integer too long) leave ``args`` out and say why in ``unreadable``.
    """
    try:
        text = line.decode()
        message, end = _decode(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError included
        return None
    if not isinstance(message, dict):
        return None
    if end < len(text):
        try:
            message["args"] = _decode(text, end)[0]
        except RecursionError:
            message["unreadable"] = "they are nested too deeply"
        except ValueError as exc:
            message["unreadable"] = str(exc)
    return message
