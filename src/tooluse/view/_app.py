"""The viewer as a Starlette app on loopback, and the same pages as a static bundle."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..events import CallEnd, CallRejected
from ._catalog import IMAGE_TYPES, PAGE_EVENTS, Catalog, Line, Run
from ._html import CSS, JS
from ._pages import (
    bench_page,
    diff_page,
    index_page,
    pages_of,
    render_lines,
    run_page,
)

__all__ = ["StaticLinks", "create_app", "write_static"]

#: Pages never load anything from elsewhere, and never run inline script:
#: even text that escaped escaping could not execute.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_ASSETS = {"view.css": (CSS, "text/css"), "view.js": (JS, "text/javascript")}
#: At most this many events, and about this many bytes of them, in one answer to an
#: open page that asks for what was appended.
LIVE_EVENTS = 100
LIVE_BYTES = 512 * 1024


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


class _AddressedToUs:
    """Answers only requests whose Host and Origin name the address served.

    A web page can rebind its own name to 127.0.0.1 (DNS rebinding) and have the
    browser read what the viewer serves: it still names itself in the Host header,
    and a page elsewhere on loopback names itself in Origin. Both are refused.
    """

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        names = [f"{name}:{port}" for name in ("127.0.0.1", "localhost")]
        if port == 80:  # a client leaves out the scheme's own port
            names += ["127.0.0.1", "localhost"]
        self.hosts = set(names)
        self.origins = {f"http://{name}" for name in names}
        self.served = f"http://127.0.0.1:{port}/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            refused: Response | None = None
            if headers.get("host", "").lower() not in self.hosts:
                refused = Response(
                    f"this viewer answers only at {self.served}\n",
                    status_code=421,
                    media_type="text/plain",
                    headers=_HEADERS,
                )
            elif origin is not None and origin.lower() not in self.origins:
                refused = Response(
                    "requests from other origins are refused\n",
                    status_code=403,
                    media_type="text/plain",
                    headers=_HEADERS,
                )
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _held_back(lines: list[Line]) -> int:
    """How many lines at the end are script calls whose script has not been written yet."""
    n = 0
    for line in reversed(lines):
        event = line.typed()
        if isinstance(event, CallEnd | CallRejected) and event.record.source == "script":
            n += 1
        else:
            break
    return n


def create_app(catalog: Catalog, *, port: int) -> Starlette:
    """The viewer over ``catalog``'s paths, to serve on 127.0.0.1 at ``port``.

    It answers only requests addressed to ``127.0.0.1:port`` or ``localhost:port``
    (the Host header) from no other origin than those (the Origin header).
    """
    links = ServerLinks()
    # Handlers are plain functions: Starlette runs them on worker threads, so reading a
    # trace never holds up the event loop. One at a time: they share the catalog.
    lock = threading.Lock()

    def find_run(request: Request) -> Run | None:
        catalog.scan()
        return catalog.run(str(request.path_params["run_id"]))

    def number(request: Request, name: str) -> int | None:
        text = request.query_params.get(name, "0")
        return int(text) if text.isascii() and text.isdigit() else None

    def index(request: Request) -> Response:
        with lock:
            catalog.scan()
            return _html(index_page(catalog, links, watch="/state"))

    def state(request: Request) -> Response:
        with lock:
            catalog.scan()
            return JSONResponse({"state": catalog.state()}, headers=_HEADERS)

    def run(request: Request) -> Response:
        with lock:
            found = find_run(request)
            if found is None:
                return _not_found()
            page = min(number(request, "page") or 0, pages_of(found) - 1)
            live = f"/run/{found.id}/more?page={page}&from={found.count}"
            return _html(run_page(found, links, page, live))

    def more(request: Request) -> Response:
        """The events of an open page that came after ``from``, a bounded piece at a time."""
        with lock:
            found = find_run(request)
            page, start = number(request, "page"), number(request, "from")
            if found is None or page is None or start is None:
                return _not_found()
            page_end = (page + 1) * PAGE_EVENTS
            start = min(max(start, page * PAGE_EVENTS), page_end)
            stop = min(page_end, start + LIVE_EVENTS)
            new = found.lines(start, stop, max_bytes=LIVE_BYTES)
            ended = found.end is not None
            # A script's calls are written before the script: they wait for it, unless
            # this page or the run ends with them. Within the file, a piece of only
            # such calls goes out as it is, or the page would stop.
            held = _held_back(new)
            at_tail = start + len(new) == found.count
            waiting = held and start + len(new) < page_end and not (ended and at_tail)
            if waiting and (at_tail or held < len(new)):
                new = new[: len(new) - held]
            else:
                waiting = 0
            after = start + len(new)
            last_page = pages_of(found) - 1
            return JSONResponse(
                {
                    "html": str(render_lines(found, links, new)) if new else "",
                    "next": f"/run/{found.id}/more?page={page}&from={after}",
                    # More of this page is there already: ask again at once.
                    "more": after < min(page_end, found.count) and not (waiting and at_tail),
                    "ended": ended,
                    # This page is full and a later one holds the newest events.
                    "next_page": (
                        links.run(found.id, last_page)
                        if after >= page_end and last_page > page
                        else None
                    ),
                },
                headers=_HEADERS,
            )

    def raw(request: Request) -> Response:
        with lock:
            found = find_run(request)
            data = found.raw(int(request.path_params["line"])) if found is not None else None
            if data is None:
                return _not_found()
            return Response(data, media_type="text/plain; charset=utf-8", headers=_HEADERS)

    def bench(request: Request) -> Response:
        with lock:
            catalog.scan()
            found = catalog.benches.get(str(request.path_params["bench_id"]))
            return _html(bench_page(found, links)) if found is not None else _not_found()

    def bench_file(request: Request) -> Response:
        with lock:
            catalog.scan()
            found = catalog.benches.get(str(request.path_params["bench_id"]))
            image = found.image(str(request.path_params["name"])) if found is not None else None
            if image is None:
                return _not_found()
            media = IMAGE_TYPES[image.suffix.lower()]
            return FileResponse(image, media_type=media, headers=_HEADERS)

    def diff(request: Request) -> Response:
        with lock:
            catalog.scan()
            a = catalog.benches.get(request.query_params.get("a", ""))
            b = catalog.benches.get(request.query_params.get("b", ""))
            if a is None or b is None:
                return _not_found()
            return _html(diff_page(a, b, links))

    def asset(request: Request) -> Response:
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
    return Starlette(routes=routes, middleware=[Middleware(_AddressedToUs, port=port)])


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
        for page in range(pages_of(found)):
            put(links.run(found.id, page), run_page(found, links, page, None))
    benches = list(catalog.benches.values())
    for bench in benches:
        put(links.bench(bench.id), bench_page(bench, links))
        for image in bench.images():
            source = bench.image(image)
            if source is None:
                continue
            target = out / links.bench_file(bench.id, image)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            written.append(target)
    for i, a in enumerate(benches):
        for b in benches[i + 1 :]:
            put(links.diff(a.id, b.id), diff_page(a, b, links))
    for run_id, number in sorted(links.raws):
        data = runs[run_id].raw(number)
        if data is not None:
            put(links.raw(run_id, number), data)
    return written
