"""The client under the official MCP conformance suite's client scenarios.

The suite runs ``python client_conformance.py URL`` with the scenario's name in
MCP_CONFORMANCE_SCENARIO, and judges what its test server saw. The calls go
through `MCPClient` and the dispatcher, as an agent's would. Exits 1 with the
reason when something fails, so the suite's log says why.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tooluse import Dispatcher
from tooluse.mcp import MCPClient


async def main(url: str, scenario: str) -> None:
    async with MCPClient.http(url) as client:
        if scenario == "tools_call":
            dispatcher = Dispatcher(client.toolbox(), timeout=30)
            record = await dispatcher.call("add_numbers", {"a": 2, "b": 3}, call_id="1")
            if record.error is not None:
                sys.exit(f"add_numbers failed: {record.error}")
            print(record.content)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
