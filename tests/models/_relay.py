"""A TCP relay on loopback that counts the connections a client makes through it."""

from __future__ import annotations

import socket
import threading

__all__ = ["Relay"]


class Relay:
    """Relays every connection to 127.0.0.1:`upstream`, recording what crossed it.

    `connections` counts the connections clients opened; `replied[i]` is how
    many bytes the upstream sent back on the i-th; `requested` is set once a
    client's bytes reached a live upstream. A connection the upstream refuses
    is closed at once.
    """

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.connections = 0
        self.replied: list[int] = []
        self.requested = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, name="relay", daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.replied.append(0)
            self.connections += 1
            threading.Thread(
                target=self._relay, args=(client, self.connections - 1), daemon=True
            ).start()

    def _relay(self, client: socket.socket, index: int) -> None:
        with client:
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                return
            with upstream:
                threading.Thread(target=self._forward, args=(client, upstream), daemon=True).start()
                while chunk := _receive(upstream):
                    self.replied[index] += len(chunk)
                    client.sendall(chunk)

    def _forward(self, client: socket.socket, upstream: socket.socket) -> None:
        while chunk := _receive(client):
            try:
                upstream.sendall(chunk)
            except OSError:
                return
            self.requested.set()


def _receive(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""
