"""A trace written by the release before typed events loads and renders in `tooluse view`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from starlette.testclient import TestClient

from tooluse.view import Catalog, create_app

OLD_TRACE = Path(__file__).parent.parent / "data" / "trace_before_events.jsonl"
PORT = 8766


def test_an_old_trace_loads_and_every_run_renders(tmp_path: Path) -> None:
    trace = tmp_path / "old.jsonl"
    shutil.copy(OLD_TRACE, trace)
    c = TestClient(
        create_app(Catalog.of([tmp_path]), port=PORT), base_url=f"http://127.0.0.1:{PORT}"
    )
    index = c.get("/")
    assert index.status_code == 200
    ids = re.findall(r'href="/run/([0-9a-f]+-\d+)"', index.text)
    # The run paused for approval and the resume after it (a run_start, then run_resumed)
    # are one run.
    assert len(ids) == 6
    assert index.text.count(">completed<") == 6 and index.text.count(">needs_approval<") == 0
    pages = [c.get(f"/run/{i}") for i in ids]
    assert all(p.status_code == 200 for p in pages)
    text = "\n".join(p.text for p in pages)
    assert "corrupt line" not in text and "&quot;event&quot;" not in text  # no raw JSON
    for shown in ("Round 1", "calls it made (3)", "context offload", "approval", "resumed"):
        assert shown in text, shown
    assert 'class="event rejected"' in text and 'class="event script"' in text
    assert "b = get_current_weather(location=&#x27;Tokyo&#x27;)" in text  # the plan
