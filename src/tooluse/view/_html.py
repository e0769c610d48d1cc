"""HTML built from escaped parts: every string is text unless it is `Raw`.

Trace files hold what models and tools wrote, which may be HTML or script meant
to run in the viewer's page. Nothing here concatenates unescaped text: `h` escapes
each child and attribute value, and only `Raw` (HTML this package built) passes as is.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TypeAlias

__all__ = ["CSS", "JS", "Child", "Raw", "esc", "h", "join"]


class Raw(str):
    """HTML that this package built; `h` does not escape it again."""


Child: TypeAlias = "str | int | float | Raw | Iterable[Child] | None"


def esc(value: object) -> Raw:
    if isinstance(value, Raw):
        return value
    return Raw(html.escape(str(value), quote=True))


def join(children: Iterable[Child]) -> Raw:
    out: list[str] = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, (str, int, float)):
            out.append(esc(child))
        else:
            out.append(join(child))
    return Raw("".join(out))


_VOID = {"img", "br", "hr", "meta", "link", "input"}


def h(tag: str, *children: Child, **attributes: str | int | bool | None) -> Raw:
    """``<tag attributes>children</tag>``.

    ``class_`` stands for ``class`` and ``data_x`` for ``data-x``.
    """
    parts = [tag]
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        parts.append(name if value is True else f'{name}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if tag in _VOID:
        return Raw(opening)
    return Raw(f"{opening}{join(children)}</{tag}>")


CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { background: #1d232a; color: #fff; padding: 8px 16px; }
header a { color: #fff; text-decoration: none; margin-right: 16px; }
main { padding: 12px 16px; max-width: 1200px; }
table { border-collapse: collapse; background: #fff; margin: 8px 0; }
th, td { border: 1px solid #d5d9de; padding: 3px 8px; vertical-align: top; }
th { background: #eef0f3; }
table.sortable th { cursor: pointer; }
table.runs { width: 100%; }
/* A long task, id, model or file name wraps anywhere (no sideways scroll); other cells
   keep their words whole. */
table.runs td.wrap { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; background: #f2f4f6;
      padding: 6px; border-radius: 4px; max-height: 480px; overflow: auto; }
.event { background: #fff; border: 1px solid #d5d9de; border-left: 4px solid #8a94a0;
         margin: 6px 0; padding: 6px 10px; border-radius: 4px; }
.event .kind { font-weight: 600; margin-right: 8px; }
.round { margin-top: 18px; border-bottom: 2px solid #1d232a; }
.assistant { border-left-color: #3b6fd8; }
.call { border-left-color: #2f9e5b; }
.call.failed, .rejected, .corrupt, .internal_error { border-left-color: #d0342c; }
.rejected .message, .corrupt .message { color: #b3261e; font-weight: 600; }
.script { border-left-color: #8e44ad; }
.script .calls { margin-left: 16px; }
.offload { border-left-color: #d98e04; background: #fff8e6; }
.feedback { border-left-color: #d98e04; }
.run_end { border-left-color: #1d232a; }
.status-completed { color: #2f7d32; } .status-error, .status-cycle { color: #b3261e; }
.status-running { color: #3b6fd8; }
.status-served, .status-needs_approval { color: #69727d; }
.muted { color: #69727d; }
.clipped { color: #b3261e; }
.pager a, .pager span { margin-right: 8px; }
.diff-up { color: #2f7d32; } .diff-down { color: #b3261e; }
.empty { background: #fff; border: 1px dashed #8a94a0; padding: 16px; }
img.plot { max-width: 100%; background: #fff; border: 1px solid #d5d9de; margin: 6px 0; }
img.media { max-width: 480px; max-height: 480px; background: #fff; border: 1px solid #d5d9de; }
figure.media { margin: 6px 0; }
"""

JS = """
(function () {
  function cellValue(row, i) {
    var text = row.cells[i] ? row.cells[i].textContent.trim() : "";
    var n = parseFloat(text.replace(/[,%+]/g, ""));
    return isNaN(n) ? text.toLowerCase() : n;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, i) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var up = th.getAttribute("data-order") !== "asc";
        rows.sort(function (a, b) {
          var x = cellValue(a, i), y = cellValue(b, i);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        });
        th.setAttribute("data-order", up ? "asc" : "desc");
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var live = document.querySelector("[data-live]");
  if (live) {
    var url = live.getAttribute("data-live");
    var poll = function () {
      fetch(url).then(function (r) { return r.json(); }).then(function (data) {
        // The server escaped every text in this fragment.
        if (data.html) { live.insertAdjacentHTML("beforeend", data.html); }
        url = data.next;
        live.setAttribute("data-live", url);
        // This page is full: the newest events are on a later page, live in its turn.
        if (data.next_page) { live.removeAttribute("data-live"); location.href = data.next_page; }
        else if (data.ended && !data.more) { live.removeAttribute("data-live"); location.reload(); }
        else { setTimeout(poll, data.more ? 0 : 1000); }
      }).catch(function () { setTimeout(poll, 3000); });
    };
    setTimeout(poll, 1000);
  }
  var watch = document.querySelector("[data-watch]");
  if (watch) {
    var seen = watch.getAttribute("data-state");
    var check = function () {
      var url = watch.getAttribute("data-watch");
      fetch(url).then(function (r) { return r.json(); }).then(function (data) {
        if (data.state !== seen) { location.reload(); } else { setTimeout(check, 2000); }
      }).catch(function () { setTimeout(check, 5000); });
    };
    setTimeout(check, 2000);
  }
})();
"""
