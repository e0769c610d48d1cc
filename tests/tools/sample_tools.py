"""A varied set of tools whose renderings are snapshot-tested."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from tooluse import Tool, Toolbox, tool


class Address(BaseModel):
    street: str = Field(description="Street and number")
    city: str
    country_code: str = "FR"


@dataclasses.dataclass
class Window:
    start: str
    end: str


class Filters(TypedDict, total=False):
    tags: list[str]
    min_score: float


class Booking(BaseModel):
    booking_id: str
    confirmed: bool


@tool
def get_current_weather(
    location: str, unit: Literal["celsius", "fahrenheit"] = "celsius"
) -> dict[str, float]:
    """Retrieve current weather conditions for a location.

    Args:
        location: City and country, e.g. 'Paris, France'
        unit: Temperature unit to return
    """
    return {"temperature": 18.0}


@tool(side_effects=True, timeout=5)
async def book_room(
    guest: str,
    address: Address,
    window: Window,
    notes: str | None = None,
    *,
    rooms: Annotated[int, Field(ge=1, le=9)] = 1,
) -> Booking:
    """Book a hotel room.

    Parameters
    ----------
    guest : str
        Full name of the guest
    address : Address
        Where the hotel is
    window : Window
        Check-in and check-out dates, YYYY-MM-DD
    notes : str, optional
        Free-text requests for the hotel
    rooms : int
        How many rooms
    """
    return Booking(booking_id="b-1", confirmed=True)


@tool
def search(query: str, filters: Filters | None = None, limit: int = 10) -> list[str]:
    """Search the catalogue.

    :param query: Words to look for
    :param filters: Optional narrowing of the results
    :param limit: Most results to return
    """
    return [query][:limit]


def _raw_impl(**kwargs: object) -> object:
    return kwargs


raw = Tool.from_schema(
    "user.lookup",
    "Find a user by id or e-mail.",
    {
        "type": "object",
        "properties": {
            "user-id": {"type": "integer", "description": "Numeric id"},
            "from": {"type": "string", "format": "email"},
            "fields": {"type": "array", "items": {"type": "string", "enum": ["name", "email"]}},
        },
        "required": ["fields"],
    },
    _raw_impl,
)


@tool
def ping() -> str:
    """Check that the service answers."""
    return "pong"


TOOLS = Toolbox([get_current_weather, book_room, search, raw, ping])
