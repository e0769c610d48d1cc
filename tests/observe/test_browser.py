"""The viewer in a real browser: Debian's headless Chromium driven by Selenium.

Screenshots go to ``$TOOLUSE_SCREENSHOTS`` when set (docs/view_run.png was taken
so), else to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("selenium")
pytest.importorskip("uvicorn")
if shutil.which("chromedriver") is None or shutil.which("chromium") is None:
    pytest.skip(
        "needs Debian's chromium and chromium-driver (scripts/setup.sh)", allow_module_level=True
    )

import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tooluse.view import Catalog, create_app

from ._traces import REJECTED_WORD, SCRIPT_STDOUT, bench_dir, code_run, json_run


class Server:
    """The viewer served by uvicorn on a free loopback port, in a thread."""

    def __init__(self, paths: list[Path]) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(create_app(Catalog.of(paths), port=port), log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("browser-traces")
    json_run(folder / "json.jsonl")
    code_run(folder / "code.jsonl")
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1400"):
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TOOLUSE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait(browser: Any) -> WebDriverWait[Any]:
    return WebDriverWait(browser, 20)


def open_run(browser: Any, task_start: str) -> None:
    """Click the run-list link of the run whose task starts so."""
    rows = browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")
    for row in rows:
        if row.find_elements(By.TAG_NAME, "td")[1].text.startswith(task_start):
            row.find_element(By.CSS_SELECTOR, "a.run-link").click()
            wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "events")))
            return
    raise AssertionError(f"no run starting {task_start!r} among {len(rows)}")


def test_click_through_runs_and_see_rejections_and_script_output(
    traces: Path, browser: Any, shots: Path
) -> None:
    with Server([traces]) as server:
        browser.get(server.url + "/")
        wait(browser).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "table.runs"))
        )
        assert len(browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")) == 2
        browser.save_screenshot(str(shots / "view_runs.png"))

        open_run(browser, "Weather in Paris?")
        message = browser.find_element(By.CSS_SELECTOR, ".event.rejected .message")
        assert message.is_displayed() and REJECTED_WORD in message.text
        # The hostile task, result and answer show as text and never ran.
        assert "<script>window.__pwned = 1</script>" in browser.find_element(By.ID, "events").text
        assert browser.execute_script("return window.__pwned === undefined")
        browser.save_screenshot(str(shots / "view_rejected.png"))

        browser.back()
        open_run(browser, "Weather in Paris and Tokyo?")
        stdout = browser.find_element(By.CSS_SELECTOR, ".event.script pre.stdout")
        assert stdout.is_displayed() and stdout.text == SCRIPT_STDOUT
        calls = browser.find_elements(By.CSS_SELECTOR, ".event.script .calls .event.call")
        assert len(calls) == 2 and all(c.is_displayed() for c in calls)
        refused = browser.find_element(By.CSS_SELECTOR, ".event.script .calls .rejected .message")
        assert refused.is_displayed() and "kelvin" in refused.text
        browser.save_screenshot(str(shots / "view_run.png"))


def test_a_trace_being_written_grows_in_the_open_page(
    traces: Path, browser: Any, tmp_path: Path
) -> None:
    lines = (traces / "json.jsonl").read_text().splitlines(keepends=True)
    growing = tmp_path / "growing.jsonl"
    growing.write_text("".join(lines[:3]))
    with Server([growing]) as server:
        browser.get(server.url + "/")
        open_run(browser, "Weather in Paris?")
        assert not browser.find_elements(By.CSS_SELECTOR, ".event.rejected")
        with growing.open("a") as handle:
            handle.write("".join(lines[3:]))
        wait(browser).until(
            expected_conditions.text_to_be_present_in_element(
                (By.CSS_SELECTOR, ".event.run_end"), "completed"
            )
        )
        assert REJECTED_WORD in browser.find_element(By.CSS_SELECTOR, ".event.rejected").text


def test_an_open_page_follows_a_tail_that_fills_it_to_the_newest_page(
    browser: Any, tmp_path: Path
) -> None:
    def notes(first: int, last: int) -> str:
        return "".join(
            json.dumps({"event": "feedback", "round": i, "text": f"note {i}", "t": float(i)}) + "\n"
            for i in range(first, last + 1)
        )

    start = {"event": "run_start", "task": "tail", "model": "m", "convention": "json"}
    growing = tmp_path / "tail.jsonl"
    growing.write_text(json.dumps(start) + "\n" + notes(1, 490))
    with Server([growing]) as server:
        browser.get(server.url + "/")
        open_run(browser, "tail")
        assert "?page=" not in browser.current_url
        # 1,091 events: the open first page fills, and the tail goes on on page 3.
        with growing.open("a") as handle:
            handle.write(notes(491, 1090))
        wait(browser).until(lambda b: b.current_url.endswith("?page=2"))
        wait(browser).until(
            expected_conditions.text_to_be_present_in_element((By.ID, "events"), "note 1090")
        )
        assert "note 999" not in browser.find_element(By.ID, "events").text
        end = {"event": "run_end", "status": "completed", "rounds": 0, "calls": 0}
        with growing.open("a") as handle:
            handle.write(json.dumps(end) + "\n")
        wait(browser).until(
            expected_conditions.text_to_be_present_in_element(
                (By.CSS_SELECTOR, ".event.run_end"), "completed"
            )
        )


def test_the_open_run_list_shows_a_run_that_starts_after_it_was_opened(
    traces: Path, browser: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(traces / "json.jsonl", folder / "first.jsonl")
    with Server([folder]) as server:
        browser.get(server.url + "/")
        rows = (By.CSS_SELECTOR, "table.runs tbody tr")
        wait(browser).until(expected_conditions.presence_of_element_located(rows))
        assert len(browser.find_elements(*rows)) == 1
        shutil.copy(traces / "code.jsonl", folder / "second.jsonl")
        wait(browser).until(lambda b: len(b.find_elements(*rows)) == 2)
        tasks = [
            row.find_elements(By.TAG_NAME, "td")[1].text for row in browser.find_elements(*rows)
        ]
        assert any(task.startswith("Weather in Paris and Tokyo?") for task in tasks)


def test_a_bench_table_sorts_by_a_clicked_column(tmp_path: Path, browser: Any, shots: Path) -> None:
    bench = bench_dir(tmp_path / "bench", {"simple": 1, "multiple": 4, "parallel": 2})
    with Server([bench]) as server:
        browser.get(server.url + "/")
        browser.find_element(By.PARTIAL_LINK_TEXT, str(bench)).click()
        table = wait(browser).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "table.sortable"))
        )

        def column(header: str) -> list[str]:
            headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
            i = headers.index(header)
            rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
            return [row.find_elements(By.TAG_NAME, "td")[i].text for row in rows]

        accuracy = next(
            th for th in table.find_elements(By.CSS_SELECTOR, "thead th") if th.text == "accuracy"
        )
        accuracy.click()
        up = column("accuracy")
        assert up == sorted(up, key=lambda text: float(text.rstrip("%")))
        accuracy.click()
        assert column("accuracy") == up[::-1]
        assert column("category")[0] == "multiple"  # 100%, first when sorted down
        browser.save_screenshot(str(shots / "view_bench.png"))


def test_the_run_table_fits_a_1280_px_window_with_long_tasks(
    browser: Any, tmp_path: Path, shots: Path
) -> None:
    from tooluse import Agent
    from tooluse.models import ScriptedModel

    tasks = [
        "Compare the weather in Paris, Tokyo, Buenos Aires, Reykjavik, Nairobi and Wellington "
        "over the next ten days and write a long report about which city to visit " * 3,
        "Fetch https://example.org/" + "a-very-long-path-segment-without-any-spaces-" * 8,
        "x" * 400,
    ]
    for i, task in enumerate(tasks):
        trace = tmp_path / f"a-rather-long-trace-file-name-for-run-number-{i}.jsonl"
        Agent(ScriptedModel([{"content": "ok"}]), trace=trace).run(task)
    size = browser.get_window_size()
    browser.set_window_size(1280, 800)
    try:
        with Server([tmp_path]) as server:
            browser.get(server.url + "/")
            wait(browser).until(
                expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "table.runs"))
            )
            assert len(browser.find_elements(By.CSS_SELECTOR, "table.runs tbody tr")) == 3
            browser.save_screenshot(str(shots / "view_runs_1280.png"))
            inner, scroll = browser.execute_script(
                "return [window.innerWidth, document.scrollingElement.scrollWidth]"
            )
            assert inner <= 1280 and scroll <= inner, (scroll, inner)
            # Only the long texts wrap: a status stays one word on one line.
            lines = browser.execute_script(
                "return [...document.querySelectorAll('table.runs td[class^=status-]')]"
                ".map(td => { const r = document.createRange(); r.selectNodeContents(td);"
                " return r.getClientRects().length; })"
            )
            assert lines == [1, 1, 1], lines
    finally:
        browser.set_window_size(size["width"], size["height"])
