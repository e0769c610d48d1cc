"""The viewer's pages, rendered on the server from the catalog: no build step, no framework."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from markdown_it import MarkdownIt

from .. import events as ev
from .._exceptions import MediaError
from .._records import CallRecord, RejectedCall
from ..eval._row import Row, read_results
from ..media import describe, from_block, is_block
from ._catalog import PAGE_EVENTS, BenchDir, Catalog, Corrupt, Line, Run
from ._html import Child, Raw, esc, h, join

__all__ = [
    "PAGE_EVENTS",
    "Links",
    "bench_page",
    "diff_page",
    "index_page",
    "pages_of",
    "run_page",
]

#: Characters of one text shown in the page; the rest is behind the raw link.
CLIP = 20_000


class Links(Protocol):
    """Where pages live: the server's URLs, or the files of a static bundle."""

    def index(self) -> str: ...
    def run(self, run_id: str, page: int = 0) -> str: ...
    def raw(self, run_id: str, line: int) -> str: ...
    def bench(self, bench_id: str) -> str: ...
    def bench_file(self, bench_id: str, name: str) -> str: ...
    def diff(self, a: str, b: str) -> str: ...
    def asset(self, name: str) -> str: ...


def layout(links: Links, title: str, *body: Child, live: str | None = None) -> str:
    page = h(
        "html",
        h(
            "head",
            h("meta", charset="utf-8"),
            h("title", f"{title} · tooluse view"),
            h("link", rel="stylesheet", href=links.asset("view.css")),
        ),
        h(
            "body",
            h("header", h("a", "tooluse view", href=links.index()), esc(title)),
            h("main", *body),
            h("script", src=links.asset("view.js")),
        ),
        lang="en",
    )
    return "<!DOCTYPE html>\n" + page


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + " UTC" if t else "–"


def _secs(s: float | None) -> str:
    return f"{s:.2f} s" if s is not None else "–"


# -- the list of runs -----------------------------------------------------------------


def index_page(catalog: Catalog, links: Links, watch: str | None = None) -> str:
    """The run list; with `watch` (the server's state URL) the page reloads itself when a
    run starts, grows or ends, or a bench directory changes."""
    runs = catalog.runs()
    body: list[Child] = []
    if watch:
        body.append(h("div", id="watch", data_watch=watch, data_state=catalog.state()))
    for path in catalog.missing:
        body.append(h("p", h("b", "No such file or directory: "), str(path), class_="empty"))
    for path in catalog.empty:
        body.append(
            h(
                "div",
                h("b", f"Nothing to show in {path}"),
                h(
                    "p",
                    "It holds no trace files (*.jsonl written by Agent(trace=...) or "
                    "tooluse run --trace) and no bench results (results.jsonl or summary.md "
                    "from tooluse bench ... --out DIR).",
                ),
                class_="empty",
            )
        )
    body.append(h("h2", f"Runs ({len(runs)})"))
    if runs:
        rows = [
            h(
                "tr",
                h("td", h("a", run.id, href=links.run(run.id), class_="run-link"), class_="wrap"),
                h("td", _task(run), class_="wrap"),
                h("td", str(run.start.get("model", "")), class_="wrap"),
                h("td", str(run.start.get("convention", ""))),
                h("td", run.status, class_=f"status-{run.status}"),
                h("td", run.rounds),
                h("td", run.calls),
                h("td", run.rejected),
                h("td", f"{run.tokens[0]:,}"),
                h("td", f"{run.tokens[1]:,}"),
                h("td", _secs(run.duration_s)),
                h("td", _when(run.started)),
                h("td", run.file.path.name, class_="muted wrap"),
            )
            for run in runs
        ]
        head = h(
            "tr",
            *[
                h("th", c)
                for c in (
                    "run",
                    "task",
                    "model",
                    "convention",
                    "status",
                    "rounds",
                    "calls",
                    "rejected",
                    "input tok",
                    "output tok",
                    "time",
                    "started",
                    "file",
                )
            ],
        )
        body.append(h("table", h("thead", head), h("tbody", *rows), class_="sortable runs"))
    else:
        body.append(h("p", "No runs found in the given paths.", class_="muted"))
    benches = list(catalog.benches.values())
    if benches:
        body.append(h("h2", f"Bench results ({len(benches)})"))
        body.append(
            h("ul", *[h("li", h("a", str(b.path), href=links.bench(b.id))) for b in benches])
        )
        if len(benches) > 1:
            pairs = [
                h("li", h("a", f"{a.path.name} vs {b.path.name}", href=links.diff(a.id, b.id)))
                for i, a in enumerate(benches)
                for b in benches[i + 1 :]
            ]
            body.append(h("h3", "Accuracy per category, side by side"))
            body.append(h("ul", *pairs))
    return layout(links, "runs", *body)


# -- one run ---------------------------------------------------------------------------


def _task(run: Run) -> Child:
    if run.served:
        return h("span", "calls served by tooluse mcp serve", class_="muted")
    return _clip(str(run.start.get("task", "")), 120)


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _block(text: str, links: Links, run: Run, line: int, class_: str | None = None) -> Raw:
    """A text in a <pre>, clipped with a link to the raw line when it is long."""
    if len(text) <= CLIP:
        return h("pre", text, class_=class_)
    return join(
        [
            h("pre", text[:CLIP], class_=class_),
            h(
                "p",
                f"clipped: {len(text) - CLIP:,} of {len(text):,} characters not shown. ",
                h("a", "raw data", href=links.raw(run.id, line)),
                class_="clipped",
            ),
        ]
    )


#: Images the page shows inline, as ``data:`` URLs: the types a browser reads.
_INLINE = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: Images a page shows of one value, and the bytes (base64) each may take.
_MAX_IMAGES, _MAX_IMAGE_CHARS = 6, 4_000_000


def _images(value: Any) -> list[Child]:
    """Each valid image in `value` (JSON data, at any depth) as an ``<img>`` with a data: URL.

    An image block whose bytes are not an image of its type is shown as text only: the
    browser is never given bytes the media checks refuse.
    """
    found: list[dict[str, Any]] = []

    def walk(item: Any) -> None:
        if len(found) >= _MAX_IMAGES:
            return
        if is_block(item):
            if item.get("type") == "image" and item.get("mimeType") in _INLINE:
                found.append(item)
            return
        if isinstance(item, dict):
            for child in item.values():
                walk(child)
        elif isinstance(item, list):
            for child in item:
                walk(child)

    walk(value)
    shown: list[Child] = []
    for block in found:
        data = block.get("data")
        if not isinstance(data, str) or len(data) > _MAX_IMAGE_CHARS:
            continue
        try:
            from_block(block)
        except (MediaError, ValueError):
            continue
        text = describe(block)
        shown.append(
            h(
                "figure",
                h("img", src=f"data:{block['mimeType']};base64,{data}", alt=text, class_="media"),
                h("figcaption", text, class_="muted"),
                class_="media",
            )
        )
    return shown


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _box(kind: str, title: Child, *body: Child, class_: str = "", line: int = 0) -> Raw:
    return h(
        "div",
        h("div", h("span", kind, class_="kind"), title),
        *body,
        class_=f"event {class_ or kind}",
        id=f"L{line}" if line else None,
    )


@dataclass
class _Render:
    run: Run
    links: Links
    #: A script's calls come before the script's own event; they are shown inside it.
    held: list[Line]

    def line(self, line: Line) -> Raw:
        event = line.event
        if isinstance(event, Corrupt):
            return _box(
                "corrupt line",
                f" line {line.number}",
                h(
                    "div",
                    f"not read: {event.reason} ({event.length:,} bytes)",
                    class_="message",
                ),
                h("pre", event.text),
                class_="corrupt",
                line=line.number,
            )
        n = line.number
        match line.typed():
            case ev.RunStart() as e:
                return self._run_start(e, n)
            case ev.ModelRequest() as e:
                return self._model_request(e, n)
            case ev.ModelReply() as e:
                return self._model_response(e, n)
            case ev.CallEnd() | ev.CallRejected() as e:
                if e.record.source == "script":
                    self.held.append(line)  # shown inside its script's box
                    return Raw("")
                return self._outcome_box(e.record, n)
            case ev.ScriptEnd() as e:
                return self._script(e, n)
            case ev.Feedback() as e:
                return _box(
                    "feedback",
                    " (sent to the model)",
                    _block(e.text, self.links, self.run, n),
                    line=n,
                )
            case ev.AnswerChecked() as e:
                said = {
                    "noted": " (sent to the model)",
                    "corrected": ": the answer after the note passes",
                    "kept": ": the answer after the note still contradicts; the run ends with it",
                }[e.outcome]
                return _box(
                    "answer check",
                    f"{said} · round {e.round}",
                    *([_block(e.note, self.links, self.run, n)] if e.note else []),
                    class_="feedback",
                    line=n,
                )
            case ev.ContextOffload() as e:
                return self._context_offload(e, n)
            case ev.RunEnd() as e:
                return self._run_end(e, n)
            case ev.InternalError() as e:
                return _box(
                    "internal error", "", _block(e.traceback, self.links, self.run, n), line=n
                )
            case ev.ApprovalNeeded() as e:
                return self._approval_needed(e, n)
            case ev.Paused(round=r):
                return _box("paused", f" in round {r}, for the calls above", line=n)
            case ev.ApprovalDecided(decisions=decisions):
                decided = ", ".join(decisions) or "no call"
                return _box(
                    "approval decided", f" for {decided}", class_="approval_decided", line=n
                )
            case ev.Resumed(round=r):
                return _box("resumed", f" in round {r}", line=n)
            case ev.ScopeFixed() as e:
                return self._scope(e, n)
            case ev.PlanEnd() as e:
                return self._plan(e, n)
            case ev.HandleStored() as e:
                title = (
                    f" {e.call_id}'s result stored as {e.handle}: {e.shape} "
                    f"({e.chars:,} characters) · round {e.round}"
                )
                return _box("handle", title, class_="offload", line=n)
            case ev.HandleUsed() as e:
                handles = ", ".join(e.handles)
                title = f" {handles} passed to {e.name} ({e.call_id}) · round {e.round}"
                return _box("handle used", title, class_="offload", line=n)
            case ev.ContextCompress() as e:
                ids = ", ".join(e.ids) or "nothing"
                title = f" by the {e.by or '?'}: replaced {ids} by a summary"
                return _box("context compress", title, class_="offload", line=n)
            # What streams give and a trace usually leaves out: shown if a sink wrote them.
            case ev.ModelDelta() as e:
                return _box(
                    "text",
                    f" round {e.round}",
                    _block(e.text, self.links, self.run, n),
                    class_="delta",
                    line=n,
                )
            case ev.RoundEnd(round=r):
                return _box("round end", f" round {r}", class_="round_end", line=n)
            case ev.CallStart() as e:
                title = f" {e.name} ({e.id or 'no id yet'}) · round {e.round}"
                return _box("call start", title, class_="call_start", line=n)
            case ev.ScriptStart() as e:
                code = _block(e.code, self.links, self.run, n, "code")
                return _box("script start", f" {e.id} · round {e.round}", code, line=n)
            case ev.ScriptOutput() as e:
                out = _block(e.line, self.links, self.run, n)
                return _box("script output", f" {e.id}", out, class_="script_output", line=n)
            case _:
                return _box(
                    str(event.get("event", "?")),
                    "",
                    _block(_json(event), self.links, self.run, n),
                    class_="other",
                    line=n,
                )

    def _run_start(self, e: ev.RunStart, n: int) -> Raw:
        tools = ", ".join(e.tools)
        return _box(
            "run",
            f" {e.model} · {e.convention}",
            h("div", h("b", "task"), _block(e.task, self.links, self.run, n)),
            h("div", f"tools: {tools}", class_="muted"),
            class_="run_start",
            line=n,
        )

    def _model_request(self, e: ev.ModelRequest, n: int) -> Raw:
        return join(
            [
                h("h3", f"Round {e.round}", class_="round", id=f"round-{e.round}"),
                h(
                    "div",
                    f"model request: {e.messages} messages in the conversation",
                    class_="muted",
                ),
            ]
        )

    def _model_response(self, e: ev.ModelReply, n: int) -> Raw:
        message = e.message
        usage = e.usage
        body: list[Child] = []
        if message.get("content"):
            body.append(_block(str(message["content"]), self.links, self.run, n, "content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments", "")
            try:
                arguments = _json(json.loads(arguments))
            except (TypeError, ValueError):
                arguments = str(arguments)
            body.append(
                h("div", h("b", f"→ {function.get('name', '?')}"), f" ({call.get('id', '')})")
            )
            body.append(_block(arguments, self.links, self.run, n))
        tokens = f" · {usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"
        finish = f" · finish: {e.finish_reason}" if e.finish_reason else ""
        return _box("assistant", h("span", tokens + finish, class_="muted"), *body, line=n)

    def _outcome_box(self, record: CallRecord | RejectedCall, n: int) -> Raw:
        if isinstance(record, RejectedCall):
            return _box(
                "rejected",
                f" {record.name} ({record.id}) · {record.kind}",
                h("div", record.error, class_="message"),
                h("div", h("b", "arguments as written")),
                _block(record.arguments, self.links, self.run, n),
                line=n,
            )
        failed = record.error is not None
        body: list[Child] = [
            h("div", h("b", "arguments")),
            _block(_json(record.arguments), self.links, self.run, n),
            *_images(record.arguments),
        ]
        if record.error is not None:
            body += [
                h("div", h("b", "error"), class_="message"),
                _block(record.error, self.links, self.run, n),
            ]
        else:
            body += [
                h("div", h("b", "result")),
                _block(_json(record.result), self.links, self.run, n, "result"),
                *_images(record.result),
            ]
        extra = " · replayed" if record.replayed else ""
        offload = record.name in ev.CONTEXT_TOOLS
        title = h(
            "span",
            f" {record.name} ({record.id}) · {record.duration_s * 1000:.1f} ms{extra}",
        )
        return _box(
            "context tool" if offload else "call",
            title,
            *body,
            class_="call offload" if offload else ("call failed" if failed else "call"),
            line=n,
        )

    def _held_box(self, line: Line) -> Raw:
        event = line.typed()
        if isinstance(event, ev.CallEnd | ev.CallRejected):
            return self._outcome_box(event.record, line.number)
        return Raw("")

    def _script(self, e: ev.ScriptEnd, n: int) -> Raw:
        prefix = e.id + "."
        mine = [x for x in self.held if _held_id(x).startswith(prefix)]
        self.held = [x for x in self.held if x not in mine]
        calls = [self._held_box(x) for x in mine]
        body: list[Child] = [
            h("div", h("b", "code")),
            _block(e.code, self.links, self.run, n, "code"),
            h("div", h("b", "stdout")),
            _block(e.stdout, self.links, self.run, n, "stdout"),
        ]
        if e.error:
            body += [
                h("div", h("b", "error"), class_="message"),
                _block(e.error, self.links, self.run, n),
            ]
        body.append(h("div", h("b", f"calls it made ({len(mine)})"), *calls, class_="calls"))
        return _box("script", f" {e.id} · {e.status} · {e.duration_s:.3f} s", *body, line=n)

    def _context_offload(self, e: ev.ContextOffload, n: int) -> Raw:
        ids = ", ".join(e.ids)
        return _box(
            "context offload",
            f" by the {e.by or '?'}: moved {ids or 'nothing'} to the store",
            class_="offload",
            line=n,
        )

    def _run_end(self, e: ev.RunEnd, n: int) -> Raw:
        body: list[Child] = []
        if e.answer is not None:
            body += [
                h("div", h("b", "answer")),
                _block(str(e.answer), self.links, self.run, n, "answer"),
            ]
        for mark in e.untrusted_in_answer:
            sources = ", ".join(str(s) for s in mark.get("sources", ()))
            body.append(
                h(
                    "div",
                    f"the answer repeats {mark.get('value')!r}, which only untrusted "
                    f"results held ({sources})",
                    class_="message untrusted",
                )
            )
        if e.error:
            body += [
                h("div", h("b", "error"), class_="message"),
                _block(str(e.error), self.links, self.run, n),
            ]
        status = e.status
        title = h(
            "span",
            f" {status}",
            f" · {e.rounds} rounds · {e.calls} calls",
            f" · {e.rejected} rejected · {_secs(e.duration_s)}",
            class_=f"status-{status}",
        )
        return _box("end", title, *body, class_="run_end", line=n)

    def _scope(self, e: ev.ScopeFixed, n: int) -> Raw:
        tools = ", ".join(e.tools) or "none"
        body: list[Child] = []
        if e.problem:
            body.append(h("div", e.problem, class_="message"))
        return _box("scope", f" named by the {e.by or '?'}: {tools}", *body, class_="scope", line=n)

    def _plan(self, e: ev.PlanEnd, n: int) -> Raw:
        steps = [
            h(
                "li",
                f"line {step.line}: {step.name} · {step.status}",
                f" · {step.error}" if step.error else "",
            )
            for step in e.steps
        ]
        return _box(
            "plan",
            f" {e.id} · round {e.round} · {'ok' if e.ok else 'failed'}",
            _block(e.code, self.links, self.run, n, "code"),
            h("ol", *steps),
            _block(e.content, self.links, self.run, n),
            line=n,
        )

    def _approval_needed(self, e: ev.ApprovalNeeded, n: int) -> Raw:
        tools = ", ".join(p.tool for p in e.pending)
        return _box(
            "approval needed",
            f" for {tools}",
            _block(_json([p.to_dict() for p in e.pending]), self.links, self.run, n),
            class_="feedback",
            line=n,
        )

    def leftover(self) -> Raw:
        """Script calls whose script event is not on this page (or not written yet)."""
        held, self.held = self.held, []
        return join(self._held_box(x) for x in held)


def render_lines(run: Run, links: Links, lines: Sequence[Line]) -> Raw:
    render = _Render(run, links, [])
    return join([*(render.line(line) for line in lines), render.leftover()])


def _pager(run: Run, links: Links, page: int, pages: int) -> Raw:
    if pages <= 1:
        return Raw("")
    items: list[Child] = []
    for p in range(pages):
        items.append(
            h("span", f"{p + 1}") if p == page else h("a", f"{p + 1}", href=links.run(run.id, p))
        )
    return h("div", f"page {page + 1} of {pages}: ", *items, class_="pager")


def pages_of(run: Run) -> int:
    return max(1, -(-run.count // PAGE_EVENTS))


def run_page(run: Run, links: Links, page: int, live: str | None) -> str:
    """Page ``page`` of ``run``; on its last page, ``live`` (the URL its new events come
    from) lets a run still being written grow in the open page."""
    total = run.count
    pages = pages_of(run)
    page = min(max(page, 0), pages - 1)
    lines = run.lines(page * PAGE_EVENTS, (page + 1) * PAGE_EVENTS)
    tokens = run.tokens
    summary = h(
        "p",
        h("span", run.status, class_=f"status-{run.status}"),
        f" · {run.rounds} rounds · {run.calls} calls · {run.rejected} rejected"
        f" · {tokens[0]:,} input / {tokens[1]:,} output tokens · {_secs(run.duration_s)}"
        f" · {total:,} events",
        f" · {run.corrupt} corrupt lines" if run.corrupt else "",
        h("br"),
        h("span", f"{run.file.path} (run {run.index + 1} of {len(run.file.runs)})", class_="muted"),
    )
    last = page == pages - 1
    events = h(
        "div",
        render_lines(run, links, lines),
        id="events",
        data_live=live if (last and run.end is None and live) else None,
    )
    unfinished = run.file.unfinished if run.index == len(run.file.runs) - 1 else 0
    if last and unfinished:
        events = join(
            [
                events,
                h(
                    "div",
                    f"The file ends in {unfinished:,} bytes with no end of line after them: "
                    "a line still being written, or one a stopped run cut short.",
                    class_="event corrupt message",
                ),
            ]
        )
    pager = _pager(run, links, page, pages)
    return layout(
        links,
        f"run {run.id}",
        h(
            "h2",
            "Calls served by tooluse mcp serve"
            if run.served
            else _clip(str(run.start.get("task", run.id)), 200),
        ),
        summary,
        pager,
        events,
        pager,
    )


# -- bench directories -----------------------------------------------------------------


def _markdown(bench: BenchDir, links: Links, text: str) -> Raw:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    images = set(bench.images())
    for token in tokens:
        if token.type == "table_open":
            token.attrSet("class", "sortable")
        for child in token.children or ():
            if child.type == "image":
                src = str(child.attrGet("src") or "")
                # Only the directory's own plots: never a path elsewhere or a remote URL.
                child.attrSet("src", links.bench_file(bench.id, src) if src in images else "")
                child.attrSet("class", "plot")
    return Raw(md.renderer.render(tokens, md.options, {}))


def bench_page(bench: BenchDir, links: Links) -> str:
    body: list[Child] = [h("p", str(bench.path), class_="muted")]
    shown: set[str] = set()
    summary = bench.summary
    if summary is not None:
        text = summary.read_text(encoding="utf-8", errors="replace")
        shown = {name for name in bench.images() if f"]({name})" in text}
        body.append(_markdown(bench, links, text))
    rows = _rows(bench)
    if summary is None:
        if rows:
            body.append(h("h2", "Accuracy per category (from results.jsonl)"))
            body.append(_accuracy_table(rows))
        else:
            body.append(
                h(
                    "div",
                    h("b", "No results in this directory yet."),
                    h("p", "Neither summary.md nor a row in results.jsonl was found."),
                    class_="empty",
                )
            )
    rest = [name for name in bench.images() if name not in shown]
    if rest:
        body.append(h("h2", "Plots"))
        body += [
            h("img", src=links.bench_file(bench.id, name), alt=name, class_="plot") for name in rest
        ]
    return layout(links, f"bench {bench.path.name}", *body)


def _rows(bench: BenchDir) -> list[Row]:
    results = bench.results
    return read_results(results, Row.from_json) if results is not None else []


def _groups(rows: Iterable[Row]) -> dict[tuple[str, str, str], tuple[int, int]]:
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    for row in rows:
        for category in (row.category or "–", "all"):
            key = (row.suite, category, row.convention)
            passed, n = out.get(key, (0, 0))
            out[key] = (passed + int(row.correct), n + 1)
    return out


def _pct(passed: int, n: int) -> str:
    return f"{100 * passed / n:.1f}%" if n else "–"


def _accuracy_table(rows: list[Row]) -> Raw:
    head = h("tr", *[h("th", c) for c in ("suite", "category", "convention", "N", "accuracy")])
    body = [
        h("tr", h("td", s), h("td", c), h("td", v), h("td", n), h("td", _pct(p, n)))
        for (s, c, v), (p, n) in sorted(_groups(rows).items())
    ]
    return h("table", h("thead", head), h("tbody", *body), class_="sortable")


def diff_page(a: BenchDir, b: BenchDir, links: Links) -> str:
    left, right = _groups(_rows(a)), _groups(_rows(b))
    keys = sorted(set(left) | set(right))
    head = h(
        "tr",
        *[
            h("th", c)
            for c in (
                "suite",
                "category",
                "convention",
                f"N {a.path.name}",
                f"accuracy {a.path.name}",
                f"N {b.path.name}",
                f"accuracy {b.path.name}",
                "change (points)",
            )
        ],
    )
    rows: list[Child] = []
    for key in keys:
        pa, na = left.get(key, (0, 0))
        pb, nb = right.get(key, (0, 0))
        if na and nb:
            delta = 100 * pb / nb - 100 * pa / na
            change = h(
                "td",
                f"{delta:+.1f}",
                class_="diff-up" if delta > 0 else "diff-down" if delta < 0 else None,
            )
        else:
            change = h("td", "–")
        rows.append(
            h(
                "tr",
                h("td", key[0]),
                h("td", key[1]),
                h("td", key[2]),
                h("td", na),
                h("td", _pct(pa, na)),
                h("td", nb),
                h("td", _pct(pb, nb)),
                change,
            )
        )
    body: list[Child] = [
        h(
            "p",
            h("a", str(a.path), href=links.bench(a.id)),
            " vs ",
            h("a", str(b.path), href=links.bench(b.id)),
        ),
    ]
    if keys:
        body.append(h("table", h("thead", head), h("tbody", *rows), class_="sortable diff"))
    else:
        body.append(
            h("div", "Neither directory has rows in results.jsonl to compare.", class_="empty")
        )
    return layout(links, f"{a.path.name} vs {b.path.name}", *body)


def _held_id(line: Line) -> str:
    """The call id of a held script call's line."""
    event = line.typed()
    return event.record.id if isinstance(event, ev.CallEnd | ev.CallRejected) else ""
