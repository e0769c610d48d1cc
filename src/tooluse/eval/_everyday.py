"""Twelve everyday tools for ``tooluse bench tasks``: deterministic and offline.

Currency at fixed rates, weather and forecasts from a fixed table, units,
an inventory, a calendar, time zones at fixed standard-time offsets (no
daylight saving), a calculator and lists of cities. Nothing reads the clock or
the network, so a task's right answer never changes; ``data/tasks.yaml`` holds
the tasks over them.

`toolbox` shows no example calls; `toolbox_with_examples` is the same tools with
them (``tooluse bench tasks --tool-examples``), to measure what examples do.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any, Literal

from typing_extensions import TypedDict

from .. import Toolbox, tool

__all__ = ["EXAMPLES", "toolbox", "toolbox_with_examples"]

Currency = Literal["USD", "EUR", "GBP", "JPY", "CHF", "CAD"]
Unit = Literal["km", "mi", "kg", "lb", "C", "F", "m", "ft", "L", "gal"]

# Units of each currency one US dollar buys.
_PER_USD: dict[str, float] = {
    "USD": 1.0,
    "EUR": 0.92,
    "GBP": 0.79,
    "JPY": 150.0,
    "CHF": 0.88,
    "CAD": 1.36,
}
_WEATHER: dict[str, tuple[float, str]] = {
    "paris": (18.0, "partly cloudy"),
    "london": (14.0, "light rain"),
    "tokyo": (22.0, "clear"),
    "nairobi": (24.0, "sunny"),
    "new york": (20.0, "overcast"),
    "sydney": (26.0, "sunny"),
    "oslo": (3.0, "snow"),
}
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Each city's forecast shifts its temperature by these steps, day after day.
_FORECAST_SHIFT = (0.0, 2.0, -1.0, 3.0, 1.0, -2.0, 0.0)
_FORECAST_SKY = ("sunny", "cloudy", "rain", "sunny", "windy", "cloudy", "clear")
# Standard-time offsets from UTC, in hours.
_OFFSETS: dict[str, float] = {
    "london": 0.0,
    "paris": 1.0,
    "berlin": 1.0,
    "nairobi": 3.0,
    "mumbai": 5.5,
    "tokyo": 9.0,
    "sydney": 10.0,
    "new york": -5.0,
    "los angeles": -8.0,
}
_PRODUCTS: dict[str, tuple[str, str, float, int, str]] = {
    # sku: name, category, price in USD, units in stock, warehouse
    "A100": ("USB-C cable", "cables", 9.99, 120, "Berlin"),
    "A200": ("HDMI cable", "cables", 14.5, 0, "Berlin"),
    "B100": ("Wireless mouse", "peripherals", 24.99, 35, "Rotterdam"),
    "B200": ("Keyboard", "peripherals", 49.0, 12, "Rotterdam"),
    "B300": ("Webcam", "peripherals", 59.9, 4, "Berlin"),
    "C100": ("27-inch monitor", "displays", 229.0, 7, "Rotterdam"),
    "C200": ("Laptop stand", "accessories", 34.5, 60, "Berlin"),
}
_CALENDAR: dict[str, list[tuple[str, str, int]]] = {
    # date: (start, title, minutes), in order
    "2026-03-02": [
        ("09:00", "Standup", 15),
        ("10:00", "Design review", 60),
        ("13:00", "Lunch with Ana", 60),
        ("15:30", "1:1 with Sam", 30),
    ],
    "2026-03-03": [("09:00", "Standup", 15), ("11:00", "Dentist", 45)],
}
_WORKDAY = (9 * 60, 17 * 60)
_CITIES: dict[str, list[tuple[str, int]]] = {
    "japan": [("Tokyo", 13_960_000), ("Osaka", 2_750_000), ("Nagoya", 2_330_000)],
    "kenya": [("Nairobi", 4_397_000), ("Mombasa", 1_208_000), ("Kisumu", 610_000)],
    "canada": [("Toronto", 2_794_000), ("Montreal", 1_762_000), ("Vancouver", 662_000)],
    "france": [("Paris", 2_103_000), ("Marseille", 873_000), ("Lyon", 522_000)],
}


class Weather(TypedDict):
    city: str
    temperature_c: float
    conditions: str


class Day(TypedDict):
    day: str
    high_c: float
    low_c: float
    conditions: str


class Stock(TypedDict):
    sku: str
    name: str
    price_usd: float
    quantity: int
    warehouse: str


class Product(TypedDict):
    sku: str
    name: str
    price_usd: float


class Event(TypedDict):
    start: str
    title: str
    minutes: int


class LocalTime(TypedDict):
    time: str
    #: -1: the day before, 1: the day after.
    day_offset: int


class City(TypedDict):
    city: str
    population: int


def _key(text: str, table: dict[str, object], what: str) -> str:
    key = text.split(",", maxsplit=1)[0].strip().lower()
    if key not in table:
        known = ", ".join(sorted(k.title() for k in table))
        raise ValueError(f"no {what} for {text!r}; known: {known}")
    return key


@tool
def convert_currency(amount: float, from_currency: Currency, to_currency: Currency) -> float:
    """Convert an amount of money between currencies at today's rate, rounded to cents.

    Args:
        amount: How much money, in from_currency
        from_currency: ISO 4217 code of the currency the amount is in
        to_currency: ISO 4217 code of the currency to convert to
    """
    return round(amount / _PER_USD[from_currency] * _PER_USD[to_currency], 2)


@tool
def get_exchange_rate(base: Currency, target: Currency) -> float:
    """Return how many units of the target currency one unit of the base currency buys.

    Args:
        base: ISO 4217 code of the currency to convert from
        target: ISO 4217 code of the currency to convert to
    """
    return round(_PER_USD[target] / _PER_USD[base], 6)


@tool
def get_weather(city: str) -> Weather:
    """Return the current weather in a city.

    Args:
        city: City name, e.g. 'Paris'
    """
    key = _key(city, dict(_WEATHER), "weather station")
    celsius, conditions = _WEATHER[key]
    return Weather(city=key.title(), temperature_c=celsius, conditions=conditions)


@tool
def get_forecast(city: str, days: int = 3) -> list[Day]:
    """Return the daily forecast for a city, starting with Monday.

    Args:
        city: City name, e.g. 'Paris'
        days: How many days, 1 to 7
    """
    key = _key(city, dict(_WEATHER), "weather station")
    if not 1 <= days <= len(_DAYS):
        raise ValueError("days must be between 1 and 7")
    celsius, _ = _WEATHER[key]
    return [
        Day(
            day=_DAYS[i],
            high_c=celsius + _FORECAST_SHIFT[i],
            low_c=celsius + _FORECAST_SHIFT[i] - 8,
            conditions=_FORECAST_SKY[i],
        )
        for i in range(days)
    ]


# Each unit in its base unit of the same quantity (temperatures apart).
_LINEAR = {
    "km": ("length", 1000.0),
    "mi": ("length", 1609.344),
    "m": ("length", 1.0),
    "ft": ("length", 0.3048),
    "kg": ("mass", 1.0),
    "lb": ("mass", 0.45359237),
    "L": ("volume", 1.0),
    "gal": ("volume", 3.785411784),
}


@tool
def convert_units(value: float, from_unit: Unit, to_unit: Unit) -> float:
    """Convert a length, mass, volume or temperature between units, to 4 decimals.

    Args:
        value: The quantity to convert
        from_unit: Unit of value: km, mi, m, ft (length); kg, lb (mass); L, gal (volume);
            C, F (temperature)
        to_unit: Unit to convert to, of the same quantity
    """
    if {from_unit, to_unit} <= {"C", "F"}:
        celsius = value if from_unit == "C" else (value - 32) * 5 / 9
        return round(celsius if to_unit == "C" else celsius * 9 / 5 + 32, 4)
    if from_unit in ("C", "F") or to_unit in ("C", "F"):
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    quantity, factor = _LINEAR[from_unit]
    target, to_factor = _LINEAR[to_unit]
    if quantity != target:
        raise ValueError(f"cannot convert {quantity} ({from_unit}) to {target} ({to_unit})")
    return round(value * factor / to_factor, 4)


@tool
def check_stock(sku: str) -> Stock:
    """Return a product's name, price and units in stock.

    Args:
        sku: The product's SKU, e.g. 'A100'
    """
    code = sku.strip().upper()
    if code not in _PRODUCTS:
        raise ValueError(f"no product {sku!r}; SKUs: {', '.join(_PRODUCTS)}")
    name, _, price, quantity, warehouse = _PRODUCTS[code]
    return Stock(sku=code, name=name, price_usd=price, quantity=quantity, warehouse=warehouse)


@tool
def list_products(
    category: Literal["cables", "peripherals", "displays", "accessories"],
) -> list[Product]:
    """List the products of a category with their SKUs and prices.

    Args:
        category: The product category
    """
    return [
        Product(sku=sku, name=name, price_usd=price)
        for sku, (name, kind, price, _, _) in _PRODUCTS.items()
        if kind == category
    ]


@tool
def list_events(date: str) -> list[Event]:
    """List the calendar's events on a day, in order (times are London time).

    Args:
        date: The day, as YYYY-MM-DD
    """
    return [Event(start=s, title=t, minutes=m) for s, t, m in _CALENDAR.get(date.strip(), [])]


def _minutes(clock: str) -> int:
    hours, _, minutes = clock.strip().partition(":")
    try:
        total = int(hours) * 60 + int(minutes)
    except ValueError:
        raise ValueError(f"expected a time as HH:MM, got {clock!r}") from None
    if not (0 <= int(hours) < 24 and 0 <= int(minutes) < 60):
        raise ValueError(f"expected a time as HH:MM, got {clock!r}")
    return total


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@tool
def find_free_slot(date: str, minutes: int) -> str | None:
    """Return the earliest start, HH:MM, of a free slot that long between 09:00 and 17:00.

    None when the day has no such slot.

    Args:
        date: The day, as YYYY-MM-DD
        minutes: How long the slot must be
    """
    if minutes < 1:
        raise ValueError("minutes must be positive")
    start = _WORKDAY[0]
    for begins, _, length in _CALENDAR.get(date.strip(), []):
        at = _minutes(begins)
        if at - start >= minutes:
            return _clock(start)
        start = max(start, at + length)
    return _clock(start) if _WORKDAY[1] - start >= minutes else None


@tool
def convert_time(time: str, from_city: str, to_city: str) -> LocalTime:
    """Convert a clock time in one city to the time in another (standard time).

    Args:
        time: The time in from_city, as HH:MM (24-hour)
        from_city: City whose time is given, e.g. 'London'
        to_city: City whose time to return, e.g. 'Tokyo'
    """
    shift = (
        _OFFSETS[_key(to_city, dict(_OFFSETS), "time zone")]
        - _OFFSETS[_key(from_city, dict(_OFFSETS), "time zone")]
    )
    total = _minutes(time) + round(shift * 60)
    return LocalTime(time=_clock(total % (24 * 60)), day_offset=total // (24 * 60))


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _round(value: float, digits: float = 0) -> float:
    return round(value, int(digits))


_FUNCTIONS: dict[str, Callable[..., float]] = {"sqrt": math.sqrt, "abs": abs, "round": _round}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        right = _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return float(_BINARY[type(node.op)](_evaluate(node.left), right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is not None:
            return float(function(*(_evaluate(a) for a in node.args)))
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")


@tool
def calculate(expression: str) -> float:
    """Evaluate arithmetic: + - * / % **, parentheses, sqrt(), abs(), round().

    Args:
        expression: The arithmetic, e.g. '(120 + 35) * 0.17'
    """
    try:
        # 2,340 is two thousand three hundred and forty, as people write it.
        tree = ast.parse(re.sub(r"(?<=\d),(?=\d{3}\b)", "", expression), mode="eval")
    except SyntaxError:
        raise ValueError(f"not arithmetic: {expression!r}") from None
    return _evaluate(tree)


@tool
def list_cities(country: str) -> list[City]:
    """List a country's largest cities with their populations.

    Args:
        country: Country name in English, e.g. 'Japan'
    """
    key = _key(country, dict(_CITIES), "city list")
    return [City(city=c, population=p) for c, p in _CITIES[key]]


toolbox = Toolbox(
    [
        convert_currency,
        get_exchange_rate,
        get_weather,
        get_forecast,
        convert_units,
        check_stock,
        list_products,
        list_events,
        find_free_slot,
        convert_time,
        calculate,
        list_cities,
    ]
)


#: Example calls for `toolbox_with_examples`, by tool. None of them is a task's call
#: or gives a task's answer away. Results are the tools' own, but where every value
#: of a table is some task's (each weather city, each calendar day), the example is
#: a city or a day outside it, with a result of the shape the tool returns.
EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "convert_currency": [
        {
            "arguments": {"amount": 250, "from_currency": "CAD", "to_currency": "EUR"},
            "result": 169.12,
        }
    ],
    "get_exchange_rate": [{"arguments": {"base": "EUR", "target": "CHF"}, "result": 0.956522}],
    "get_weather": [
        {
            "arguments": {"city": "Madrid"},
            "result": {"city": "Madrid", "temperature_c": 21.0, "conditions": "sunny"},
        }
    ],
    "get_forecast": [
        {
            "arguments": {"city": "Madrid", "days": 2},
            "result": [
                {"day": "Monday", "high_c": 21.0, "low_c": 13.0, "conditions": "sunny"},
                {"day": "Tuesday", "high_c": 23.0, "low_c": 15.0, "conditions": "cloudy"},
            ],
        }
    ],
    "convert_units": [
        {"arguments": {"value": 10, "from_unit": "kg", "to_unit": "lb"}, "result": 22.0462},
        {"arguments": {"value": 2, "from_unit": "gal", "to_unit": "L"}, "result": 7.5708},
    ],
    "check_stock": [
        {
            "arguments": {"sku": "C200"},
            "result": {
                "sku": "C200",
                "name": "Laptop stand",
                "price_usd": 34.5,
                "quantity": 60,
                "warehouse": "Berlin",
            },
        }
    ],
    "list_products": [
        {
            "arguments": {"category": "accessories"},
            "result": [{"sku": "C200", "name": "Laptop stand", "price_usd": 34.5}],
        }
    ],
    "list_events": [
        {
            "arguments": {"date": "2026-03-09"},
            "result": [
                {"start": "09:30", "title": "Quarterly planning", "minutes": 90},
                {"start": "15:00", "title": "Budget review", "minutes": 45},
            ],
        }
    ],
    "find_free_slot": [{"arguments": {"date": "2026-03-03", "minutes": 120}, "result": "11:45"}],
    "convert_time": [
        {
            "arguments": {"time": "23:00", "from_city": "Los Angeles", "to_city": "Berlin"},
            "result": {"time": "08:00", "day_offset": 1},
        }
    ],
    "calculate": [{"arguments": {"expression": "(80 + 45) * 0.2"}, "result": 25.0}],
    "list_cities": [
        {
            "arguments": {"country": "France"},
            "result": [
                {"city": "Paris", "population": 2_103_000},
                {"city": "Marseille", "population": 873_000},
                {"city": "Lyon", "population": 522_000},
            ],
        }
    ],
}

toolbox_with_examples = Toolbox(t.with_examples(EXAMPLES[t.name]) for t in toolbox)
