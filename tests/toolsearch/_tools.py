"""A toolbox large enough to defer: the exchange-rate tool among generated neighbours."""

from __future__ import annotations

from typing import Literal

from tooluse import Tool, Toolbox, tool

CALLS: list[str] = []


@tool
def get_exchange_rate(base: str, target: str) -> float:
    """Return the exchange rate from base to target currency.

    Args:
        base: ISO 4217 code of the currency to convert from, e.g. 'USD'
        target: ISO 4217 code of the currency to convert to, e.g. 'EUR'
    """
    CALLS.append("get_exchange_rate")
    return 0.92


@tool
def set_thermostat(room: str, mode: Literal["heat", "cool", "eco"]) -> str:
    """Change the heating of a room.

    Args:
        room: the room's name
        mode: how to run it
    """
    return f"{room}: {mode}"


@tool
def lookup_capital(country: str) -> str:
    """The capital city of a country.

    Args:
        country: the country's English name
    """
    return {"France": "Paris", "Japan": "Tokyo"}.get(country, "unknown")


def filler(i: int) -> Tool:
    def run(x: str) -> str:
        return f"{i}:{x}"

    return Tool.from_schema(
        f"filler_{i}",
        f"Filler operation number {i} on widget{i} records.",
        {"type": "object", "properties": {"x": {"type": "string", "description": "input"}}},
        run,
    )


def big_box(fillers: int = 40) -> Toolbox:
    return Toolbox(
        [get_exchange_rate, set_thermostat, lookup_capital, *(filler(i) for i in range(fillers))]
    )
