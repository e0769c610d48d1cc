"""Start the sandbox's processes from a thread that lives as long as this process.

bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) fires when the *thread* that
forked it exits, not the process. A Sandbox started on a thread of a pool would die with
that thread and take down the scripts other threads are running in it.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["popen"]

_Start = Callable[[], "subprocess.Popen[bytes]"]


class _Spawner:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[tuple[_Start, Future[subprocess.Popen[bytes]]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None

    def popen(self, start: _Start) -> subprocess.Popen[bytes]:
        future: Future[subprocess.Popen[bytes]] = Future()
        with self._lock:
            # Started on first use, and again in a forked child, where it is not running.
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="tooluse-sandbox-spawner", daemon=True
                )
                self._thread.start()
            self._requests.put((start, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            start, future = self._requests.get()
            try:
                future.set_result(start())
            except BaseException as exc:
                future.set_exception(exc)


_spawner = _Spawner()


def popen(start: _Start) -> subprocess.Popen[bytes]:
    """``start()`` (which makes a ``Popen``), run on the lasting thread; raises what it raises."""
    return _spawner.popen(start)
