"""A tool whose name the vendors' APIs refuse (BFCL's ``math.factorial``)."""

from __future__ import annotations

from tooluse import Tool

SCHEMA = {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}


def dotted_factorial(seen: list[int]) -> Tool:
    """``math.factorial``; each number it is called with goes into `seen`."""

    def factorial(number: int) -> int:
        seen.append(number)
        result = 1
        for i in range(2, number + 1):
            result *= i
        return result

    return Tool.from_schema("math.factorial", "Factorial of a number.", SCHEMA, factorial)
