"""``tooluse view``: a local web viewer of trace files and bench result directories.

    tooluse view traces/ results/ [--port 8765] [--static site/]

The server binds to 127.0.0.1 and reads only the paths it was given. Pages are
rendered on the server (Starlette, no build step); `write_static` writes the same
pages as a self-contained bundle. Needs the ``view`` extra.
"""

from __future__ import annotations

from ._app import create_app, write_static
from ._catalog import Catalog

__all__ = ["Catalog", "create_app", "write_static"]
