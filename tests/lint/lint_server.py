"""An MCP server whose tools the linter reads over stdio: one well made, one whose
annotations say it only reads although its name says it deletes.

    python lint_server.py
"""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

app = MCPServer("lint-test")
NOTES = {"n-1": "buy milk"}
NoteId = Annotated[str, Field(description="Id of the note, e.g. 'n-1'")]


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(note_id: NoteId) -> str:
    """Return the text of one note."""
    return NOTES[note_id]


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def delete_note(note_id: NoteId) -> bool:
    """Remove one note for good; true if it existed."""
    return NOTES.pop(note_id, None) is not None


if __name__ == "__main__":
    app.run()
