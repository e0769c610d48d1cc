"""``tooluse view``: a local web viewer of trace files and bench result directories.

    tooluse view traces/ results/ [--port 8765] [--static site/]

The server binds to 127.0.0.1 and answers only requests addressed to it there (Host
and Origin checked); it reads only files whose real path lies under the paths it was
given, and reads traces incrementally, keeping a page of events in memory, not the
file. Pages are rendered on the server (Starlette, no build step); `write_static`
writes the same pages as a self-contained bundle. Needs the ``view`` extra.
"""

from __future__ import annotations

from ._app import create_app, write_static
from ._catalog import Catalog

__all__ = ["Catalog", "create_app", "write_static"]
