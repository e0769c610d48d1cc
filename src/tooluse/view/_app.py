"""The viewer as a Starlette app on loopback, and the same pages as a static bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ._catalog import IMAGE_TYPES, Catalog, Line, Run
from ._html import CSS, JS
from ._pages import (
    PAGE_EVENTS,
    bench_page,
    diff_page,
    index_page,
    render_lines,
    run_page,
)

__all__ = ["StaticLinks", "create_app", "write_static"]

#: Pages never load anything from elsewhere, and never run inline script:
#: even text that escaped escaping could not execute.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ASSETS = {"view.css": (CSS, "text/css"), "view.js": (JS, "text/javascript")}


class ServerLinks:
    def index(self) -> str:
        return "/"

    def run(self, run_id: str, page: int = 0) -> str:
        return f"/run/{run_id}" + (f"?page={page}" if page else "")

    def raw(self, run_id: str, line: int) -> str:
        return f"/raw/{run_id}/{line}"

    def bench(self, bench_id: str) -> str:
        return f"/bench/{bench_id}/"

    def bench_file(self, bench_id: str, name: str) -> str:
        return f"/bench/{bench_id}/{name}"

    def diff(self, a: str, b: str) -> str:
        return f"/diff?a={a}&b={b}"

    def asset(self, name: str) -> str:
        return f"/assets/{name}"


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


def _not_found() -> Response:
    return Response("not found\n", status_code=404, media_type="text/plain", headers=_HEADERS)


def _held_back(lines: list[Line]) -> int:
    """How many lines at the end are script calls whose script has not been written yet."""
    n = 0
    for line in reversed(lines):
        event = line.event
        if isinstance(event, dict) and event.get("source") == "script" and "code" not in event:
            n += 1
        else:
            break
    return n


def create_app(catalog: Catalog) -> Starlette:
    """The viewer over `catalog`'s paths; serve it on 127.0.0.1 only."""
    links = ServerLinks()

    def find_run(request: Request) -> Run | None:
        catalog.scan()
        return catalog.run(str(request.path_params["run_id"]))

    async def index(request: Request) -> Response:
        catalog.scan()
        return _html(index_page(catalog, links, watch="/state"))

    async def state(request: Request) -> Response:
        catalog.scan()
        return JSONResponse({"state": catalog.state()}, headers=_HEADERS)

    async def run(request: Request) -> Response:
        found = find_run(request)
        if found is None:
            return _not_found()
        try:
            page = int(request.query_params.get("page", "0"))
        except ValueError:
            page = 0
        live = f"/run/{found.id}/more?from={len(found.lines)}"
        return _html(run_page(found, links, page, live))

    async def more(request: Request) -> Response:
        found = find_run(request)
        start = request.query_params.get("from", "")
        if found is None or not start.isdigit():
            return _not_found()
        new = found.lines[int(start) :]
        if found.end is None:
            new = new[: len(new) - _held_back(new)]
        after = int(start) + len(new)
        return JSONResponse(
            {
                "html": str(render_lines(found, links, new)) if new else "",
                "next": f"/run/{found.id}/more?from={after}",
                "ended": found.end is not None,
            },
            headers=_HEADERS,
        )

    async def raw(request: Request) -> Response:
        found = find_run(request)
        number = int(request.path_params["line"])
        if found is None or all(line.number != number for line in found.lines):
            return _not_found()
        data = found.file.raw_line(number)
        if data is None:
            return _not_found()
        return Response(data, media_type="text/plain; charset=utf-8", headers=_HEADERS)

    async def bench(request: Request) -> Response:
        catalog.scan()
        found = catalog.benches.get(str(request.path_params["bench_id"]))
        return _html(bench_page(found, links)) if found is not None else _not_found()

    async def bench_file(request: Request) -> Response:
        catalog.scan()
        found = catalog.benches.get(str(request.path_params["bench_id"]))
        image = found.image(str(request.path_params["name"])) if found is not None else None
        if image is None:
            return _not_found()
        media = IMAGE_TYPES[image.suffix.lower()]
        return FileResponse(image, media_type=media, headers=_HEADERS)

    async def diff(request: Request) -> Response:
        catalog.scan()
        a = catalog.benches.get(request.query_params.get("a", ""))
        b = catalog.benches.get(request.query_params.get("b", ""))
        if a is None or b is None:
            return _not_found()
        return _html(diff_page(a, b, links))

    async def asset(request: Request) -> Response:
        found = _ASSETS.get(str(request.path_params["name"]))
        if found is None:
            return _not_found()
        text, media = found
        return Response(text, media_type=media, headers=_HEADERS)

    routes = [
        Route("/", index),
        Route("/state", state),
        Route("/run/{run_id}", run),
        Route("/run/{run_id}/more", more),
        Route("/raw/{run_id}/{line:int}", raw),
        Route("/bench/{bench_id}/", bench),
        Route("/bench/{bench_id}/{name}", bench_file),
        Route("/diff", diff),
        Route("/assets/{name}", asset),
    ]
    return Starlette(routes=routes)


class StaticLinks:
    """Relative file names of a static bundle; it remembers the raw lines pages link to."""

    def __init__(self) -> None:
        self.raws: set[tuple[str, int]] = set()

    def index(self) -> str:
        return "index.html"

    def run(self, run_id: str, page: int = 0) -> str:
        return f"run-{run_id}.html" if not page else f"run-{run_id}-p{page + 1}.html"

    def raw(self, run_id: str, line: int) -> str:
        self.raws.add((run_id, line))
        return f"raw/{run_id}-L{line}.txt"

    def bench(self, bench_id: str) -> str:
        return f"bench-{bench_id}.html"

    def bench_file(self, bench_id: str, name: str) -> str:
        return f"bench-{bench_id}/{name}"

    def diff(self, a: str, b: str) -> str:
        return f"diff-{a}-{b}.html"

    def asset(self, name: str) -> str:
        return f"assets/{name}"


def write_static(catalog: Catalog, out: Path) -> list[Path]:
    """Write every page, plot and linked raw line under `out`; returns the files written."""
    links = StaticLinks()
    written: list[Path] = []

    def put(name: str, data: str | bytes) -> None:
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        written.append(path)

    out.mkdir(parents=True, exist_ok=True)
    for name, (text, _media) in _ASSETS.items():
        put(links.asset(name), text)
    put(links.index(), index_page(catalog, links))
    runs: dict[str, Run] = {}
    for found in catalog.runs():
        runs[found.id] = found
        pages = max(1, -(-len(found.lines) // PAGE_EVENTS))
        for page in range(pages):
            put(links.run(found.id, page), run_page(found, links, page, None))
    benches = list(catalog.benches.values())
    for bench in benches:
        put(links.bench(bench.id), bench_page(bench, links))
        for image in bench.images():
            target = out / links.bench_file(bench.id, image)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bench.path / image, target)
            written.append(target)
    for i, a in enumerate(benches):
        for b in benches[i + 1 :]:
            put(links.diff(a.id, b.id), diff_page(a, b, links))
    for run_id, number in sorted(links.raws):
        data = runs[run_id].file.raw_line(number)
        if data is not None:
            put(links.raw(run_id, number), data)
    return written
