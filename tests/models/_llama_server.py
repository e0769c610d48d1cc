"""llama-cpp-python's OpenAI-compatible server, run on loopback for end-to-end tests.

`LlamaServer` starts ``python -m llama_cpp.server`` on the embedded SmolLM2
model, waits until it answers, and always stops it again: terminate, then kill
if it lingers. Its output goes to a temporary file whose tail is quoted when
it fails to start.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from types import TracebackType
from typing import IO

from tooluse.models._local import default_model_path

# The GGUF's own template ignores tools under "auto"; this one honours them.
CHAT_FORMAT = "chatml-function-calling"
_READY_WITHIN = 120.0
_STOP_WITHIN = 5.0
# Loopback only, whatever proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A loopback port nothing listens on (free when probed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """One server process on 127.0.0.1; use it as a context manager."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> LlamaServer:
        """Start the server and return once ``GET /v1/models`` answers 200."""
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--chat_format",
            CHAT_FORMAT,
            # With the default of one batch thread per core, a busy machine keeps
            # one thread waiting on the other at every step: a 10-token prompt
            # then takes 8 s to read instead of 0.1 s.
            "--n_threads",
            "1",
            "--n_threads_batch",
            "1",
        ]
        # Open for as long as the process runs; `_end` closes it.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the process, killing it if it lingers; a no-op once stopped.

        Uvicorn's graceful shutdown waits for requests in flight, so a server
        busy generating is killed after a few seconds rather than waited for.
        """
        self._end(graceful=True)

    def kill(self) -> None:
        """Kill the process at once, as a crash would, dropping requests in flight."""
        self._end(graceful=False)

    def _end(self, *, graceful: bool) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            if graceful:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=_STOP_WITHIN)
            if process.poll() is None:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + _READY_WITHIN
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {self._process.returncode}:\n{self._tail()}"
                )
            try:
                with _OPENER.open(f"{self.base_url}/models", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise RuntimeError(
            f"llama_cpp.server did not answer within {_READY_WITHIN:g} s:\n{self._tail()}"
        )

    def _tail(self, size: int = 4000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-size:]
