"""MCP in one run: call overhead of our client, throughput of our server, prompt size.

    python bench/mcp_bench.py [--calls 300] [--repeat 3] [--tools 50]

Runs `bench/mcp_client.py` (per call over stdio and HTTP, our client and dispatcher
against the bare SDK client) and then `bench/mcp_server.py` (our server's calls/s
against a plain SDK server; the listing of a 50-tool server against its stub
module), prints both tables and ends with one JSON line holding both results.
(Not ``bench/mcp.py``: a script there would shadow the SDK's ``mcp`` package for
every other script in this folder.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _options import add_mcp_load

HERE = Path(__file__).resolve().parent


def run(script: str, arguments: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(HERE / script), *arguments],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    *table, last = done.stdout.rstrip("\n").splitlines()
    print("\n".join(table), end="\n\n")
    result: dict[str, object] = json.loads(last)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mcp_load(parser)
    args = parser.parse_args()
    common = ["--calls", str(args.calls), "--repeat", str(args.repeat)]
    client = run("mcp_client.py", common)
    server = run("mcp_server.py", [*common, "--tools", str(args.tools)])
    print(json.dumps({"bench": "mcp", "client": client, "server": server}))


if __name__ == "__main__":
    main()
