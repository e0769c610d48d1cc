"""Run model-written Python scripts in an isolated, warm sandbox; tools run on the host.

::

    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok(await weather(**arguments))

    async with Sandbox(limits=SandboxLimits(cpu_seconds=5)) as sb:
        result = await sb.execute(
            "from tools import get_weather\\nprint(get_weather('Paris'))",
            tools=[ProxySpec("get_weather", ["location", "unit"])],
            handler=handler,
        )

Inside the script, the tool module (``tools`` by default) holds one function per
:class:`ProxySpec`, ``ToolError`` (raised when a call fails; ``.kind`` says how),
``parallel(tool, items)`` to issue many calls at once, and ``tool.aio(...)`` coroutines
for use with ``asyncio.gather``.
"""

from . import _types
from ._exceptions import SandboxError, SandboxUnavailable, SandboxWarning
from ._limits import SandboxLimits
from ._sandbox import IsolationMode, Sandbox
from ._types import *  # noqa: F403 - the types a handler and a result are made of

__all__ = [
    "IsolationMode",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "SandboxWarning",
]
__all__ += _types.__all__
