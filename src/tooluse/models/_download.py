"""Model files that are only ever seen whole and verified.

Every writer here puts its bytes in ``FILE.partial`` beside the final path,
holds an exclusive lock on it, flushes it to disk, checks its sha256 against
the pinned one, and only then renames it into place. A reader therefore never
finds a half-written or unverified file under the final name; a file whose
hash is wrong is deleted and refused.

`download` fetches one URL over HTTP(S) with the standard library, resuming
from what an earlier attempt left in the ``.partial`` file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from .._exceptions import UsageError

if TYPE_CHECKING:
    import http.client

__all__ = [
    "ModelDownloadError",
    "ModelFileError",
    "Progress",
    "download",
    "file_sha256",
    "partial_path",
    "write_verified",
]

CHUNK = 1 << 20
_CONTENT_RANGE = re.compile(r"bytes (\d+)-\d+/(\d+|\*)")

#: Called with the bytes written so far and the total, when the total is known.
Progress = Callable[[int, int | None], None]


class ModelFileError(UsageError):
    """A model file is missing, incomplete, or not the file its hash pins."""


class ModelDownloadError(ModelFileError):
    """A model file could not be fetched."""


class _Interrupted(Exception):
    """A transfer failed in a way that another attempt may get past."""


def partial_path(target: Path) -> Path:
    """Where the bytes of `target` are written until they are verified."""
    return target.with_name(target.name + ".partial")


def file_sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def write_verified(target: Path, sha256: str, chunks: Iterable[bytes]) -> Path:
    """Write `chunks` to `target` if, joined, their sha256 is `sha256`.

    Raises `ModelFileError` naming the file and both hashes when it is not;
    nothing is left behind then, nor when `chunks` itself fails.
    """
    with _locked_partial(target) as file:
        file.truncate(0)
        digest = hashlib.sha256()
        try:
            for chunk in chunks:
                file.write(chunk)
                digest.update(chunk)
            file.flush()
            os.fsync(file.fileno())
        except BaseException:
            partial_path(target).unlink(missing_ok=True)
            raise
        _commit(target, sha256, digest.hexdigest())
    return target


def download(
    url: str,
    target: Path,
    sha256: str,
    *,
    retries: int = 5,
    backoff: float = 0.5,
    timeout: float = 30.0,
    on_progress: Progress | None = None,
) -> Path:
    """Fetch `url` into `target`, resuming an earlier partial download.

    An attempt that is cut off, times out or meets a 5xx or 429 is retried with
    an HTTP Range request for the bytes still missing (from the start when the
    server ignores Range). Once an attempt and the `retries` after it have all
    added nothing, `ModelDownloadError` is raised and the ``.partial`` file is
    kept, so that running the same pull again resumes it. A 4xx answer or a refused
    connection fails at once. The finished file is checked as `write_verified`
    checks it.
    """
    with _locked_partial(target) as file:
        fruitless = 0
        best = file.seek(0, os.SEEK_END)
        while True:
            try:
                _attempt(url, file, timeout, on_progress)
                break
            except _Interrupted as exc:
                size = file.seek(0, os.SEEK_END)
                fruitless = 0 if size > best else fruitless + 1
                best = max(best, size)
                if fruitless > retries:
                    raise ModelDownloadError(
                        f"cannot download {url}: {exc}; gave up after {fruitless} attempts "
                        f"in a row that added nothing. {size:,} bytes are kept in "
                        f"{partial_path(target)}: run the same pull again to resume"
                    ) from exc
                if fruitless:
                    time.sleep(backoff * 2 ** (fruitless - 1))
        file.flush()
        os.fsync(file.fileno())
        file.seek(0)
        _commit(target, sha256, hashlib.file_digest(file, "sha256").hexdigest())
    return target


def _attempt(url: str, file: BinaryIO, timeout: float, on_progress: Progress | None) -> None:
    # Here, not at the top: only a download needs the HTTP client, and every agent
    # imports this module for its errors.
    import http.client
    import urllib.error
    import urllib.request

    offset = file.seek(0, os.SEEK_END)
    request = urllib.request.Request(url, headers={"User-Agent": "tooluse"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and offset:
            return  # the partial file already holds every byte; its hash decides
        if exc.code in (408, 429) or exc.code >= 500:
            raise _Interrupted(f"HTTP {exc.code} {exc.reason}") from exc
        raise ModelDownloadError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError | ConnectionResetError):
            raise _Interrupted(str(exc.reason)) from exc
        reason = exc.reason.strerror if isinstance(exc.reason, OSError) else exc.reason
        raise ModelDownloadError(f"cannot download {url}: {reason or exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise _Interrupted(str(exc) or type(exc).__name__) from exc
    with response:
        total = _resume_point(response, file, offset)
        length = response.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        received = 0
        for chunk in _read(response):
            file.write(chunk)
            received += len(chunk)
            if on_progress is not None:
                on_progress(file.tell(), total)
    if expected is not None and received < expected:
        raise _Interrupted(f"the connection closed after {received:,} of {expected:,} bytes")


def _resume_point(response: http.client.HTTPResponse, file: BinaryIO, offset: int) -> int | None:
    """Position `file` where the response's body belongs; return the full size if known."""
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if response.status == 206 and match is not None and int(match[1]) == offset:
        return int(match[2]) if match[2] != "*" else None
    # The server sent the whole file (it ignored Range) or a range we did not ask for.
    file.seek(0)
    file.truncate()
    if response.status == 206:
        raise _Interrupted(f"the server sent a range other than bytes={offset}-")
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _read(response: http.client.HTTPResponse) -> Iterator[bytes]:
    import http.client

    # Only the socket's failures are worth another attempt; a failing disk write
    # is raised as it is.
    while True:
        try:
            chunk = response.read(CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            raise _Interrupted(str(exc) or type(exc).__name__) from exc
        if not chunk:
            return
        yield chunk


@contextlib.contextmanager
def _locked_partial(target: Path) -> Iterator[io.BufferedRandom]:
    """Open `target`'s partial file for writing, alone.

    Two pulls appending to one partial file would interleave their bytes, and
    the one that renames it first would leave the other writing into the
    verified file.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(target)
    with open(os.open(partial, os.O_RDWR | os.O_CREAT, 0o644), "r+b") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ModelFileError(
                f"another pull is writing {partial}; wait for it to finish"
            ) from None
        yield file


def _commit(target: Path, expected: str, actual: str) -> None:
    partial = partial_path(target)
    if actual != expected:
        partial.unlink(missing_ok=True)
        raise ModelFileError(
            f"{partial} is not the pinned file for {target.name}: expected sha256 "
            f"{expected}, got {actual}; it was deleted"
        )
    os.replace(partial, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # makes the rename itself survive a crash
    finally:
        os.close(directory)
