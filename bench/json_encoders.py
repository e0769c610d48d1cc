"""JSON encoders for tool-call traffic: the one tooluse keeps against the alternatives.

Run: PYTHONPATH=src .venv/bin/python bench/json_encoders.py

Every call a script makes is encoded twice (its arguments in the sandbox, its reply on the
host) and its arguments once more by the dispatcher. Rows, per value, in ns:
- json.dumps: the standard library as usually called (builds a C encoder per call).
- JSONEncoder.encode: an encoder object built once (still builds a C encoder per call).
- tooluse json_encoder: ``tooluse.sandbox._wire.json_encoder``, the C encoder built once.
- orjson, msgspec, pydantic_core.to_json, where installed: compact output only, and only
  on the host (the sandbox sees the standard library alone).

Prints a table, then one JSON line.
"""

from __future__ import annotations

import json
import statistics
import timeit
from collections.abc import Callable
from typing import Any

from tooluse.sandbox._wire import json_encoder

VALUES: dict[str, object] = {
    "small call": {"location": "Paris", "unit": "c"},
    "int": 42,
    "nested result": {
        "city": "Paris",
        "days": [
            {"day": i, "high": 20.5 + i, "low": 11, "rain": [0.1, 0.0, 2.5]} for i in range(7)
        ],
        "note": "héllo ✓",
    },
}


def candidates() -> dict[str, Callable[[Any], object]]:
    found: dict[str, Callable[[Any], object]] = {
        "json.dumps": lambda v: json.dumps(v, separators=(",", ":")),
        "JSONEncoder.encode": json.JSONEncoder(separators=(",", ":"), check_circular=False).encode,
        "tooluse json_encoder": json_encoder(),
    }
    try:
        import orjson

        found["orjson (host only)"] = orjson.dumps
    except ImportError:
        pass
    try:
        import msgspec

        found["msgspec (host only)"] = msgspec.json.encode
    except ImportError:
        pass
    try:
        import pydantic_core

        found["pydantic_core (host only)"] = pydantic_core.to_json
    except ImportError:
        pass
    return found


def per_call_ns(fn: Callable[[Any], object], value: object) -> float:
    timer = timeit.Timer(lambda: fn(value))
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(repeat=7, number=number)) / number * 1e9


def main() -> None:
    rows = {
        name: {label: per_call_ns(fn, value) for label, value in VALUES.items()}
        for name, fn in candidates().items()
    }
    width = 28
    print(f"{'encoder':<{width}}" + "".join(f"{label:>16}" for label in VALUES))
    for name, row in rows.items():
        print(f"{name:<{width}}" + "".join(f"{row[label]:>13,.0f} ns" for label in VALUES))
    print(json.dumps({"bench": "json_encoders", "ns_per_value": rows}))


if __name__ == "__main__":
    main()
