"""Five example tools: weather, capital, calculator, exchange rate and a paged list.

They return deterministic data so that examples, tests and benchmarks can run
offline and be checked exactly.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Literal

from typing_extensions import TypedDict

from tooluse import Toolbox, tool

_WEATHER = {
    "paris": (18.0, "partly cloudy"),
    "london": (14.0, "light rain"),
    "tokyo": (22.0, "clear"),
    "nairobi": (24.0, "sunny"),
    "new york": (20.0, "overcast"),
}
_CAPITALS = {
    "france": "Paris",
    "germany": "Berlin",
    "japan": "Tokyo",
    "brazil": "Brasilia",
    "australia": "Canberra",
    "canada": "Ottawa",
    "kenya": "Nairobi",
}
_RATES_TO_USD = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.3, "CHF": 0.88}
_CATEGORIES = {
    "fruit": [f"fruit-{i:03d}" for i in range(1, 48)],
    "tools": [f"tool-{i:03d}" for i in range(1, 13)],
}


class Weather(TypedDict):
    location: str
    temperature: float
    unit: str
    conditions: str


class ItemPage(TypedDict):
    items: list[str]
    page: int
    next_page: int | None
    total: int


@tool
def get_current_weather(
    location: str, unit: Literal["celsius", "fahrenheit"] = "celsius"
) -> Weather:
    """Retrieve current weather conditions for a location.

    Args:
        location: City and country, e.g. 'Paris, France'
        unit: Temperature unit to return
    """
    city = location.split(",", maxsplit=1)[0].strip().lower()
    if city not in _WEATHER:
        raise ValueError(f"no weather station for {location!r}")
    celsius, conditions = _WEATHER[city]
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)
    return Weather(location=location, temperature=temperature, unit=unit, conditions=conditions)


@tool
def lookup_capital(country: str) -> str:
    """Return the capital city of a country.

    Args:
        country: Country name in English
    """
    capital = _CAPITALS.get(country.strip().lower())
    if capital is None:
        raise ValueError(f"unknown country {country!r}")
    return capital


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS = {
    name: getattr(math, name)
    for name in ("sqrt", "log", "log2", "log10", "exp", "sin", "cos", "tan", "floor", "ceil")
} | {"abs": abs, "round": round}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        right = _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return float(_BINARY[type(node.op)](_evaluate(node.left), right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        function = _FUNCTIONS.get(node.func.id)
        if function is not None and not node.keywords:
            return float(function(*(_evaluate(a) for a in node.args)))
    if isinstance(node, ast.Name) and node.id in ("pi", "e"):
        return float(getattr(math, node.id))
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")


@tool
def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: Python arithmetic, e.g. '2 ** 10 + sqrt(144)'
    """
    return _evaluate(ast.parse(expression, mode="eval"))


@tool
def get_exchange_rate(base: str, target: str) -> float:
    """Return the exchange rate from base to target currency.

    Args:
        base: ISO 4217 code of the currency to convert from, e.g. 'USD'
        target: ISO 4217 code of the currency to convert to, e.g. 'EUR'
    """
    try:
        return round(_RATES_TO_USD[target.upper()] / _RATES_TO_USD[base.upper()], 6)
    except KeyError as exc:
        raise ValueError(f"unknown currency {exc.args[0]!r}") from None


@tool
def list_items(category: str, page: int = 1, page_size: int = 10) -> ItemPage:
    """List the items of a category, one page at a time.

    Args:
        category: Category name, e.g. 'fruit'
        page: 1-based page number
        page_size: Items per page (at most 50)
    """
    items = _CATEGORIES.get(category.lower())
    if items is None:
        raise ValueError(f"unknown category {category!r}; known: {sorted(_CATEGORIES)}")
    size = max(1, min(page_size, 50))
    start = (page - 1) * size
    chunk = items[start : start + size]
    more = start + size < len(items)
    return ItemPage(items=chunk, page=page, next_page=page + 1 if more else None, total=len(items))


toolbox = Toolbox([get_current_weather, lookup_capital, calculator, get_exchange_rate, list_items])
