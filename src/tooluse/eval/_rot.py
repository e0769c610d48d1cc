"""Context rot: the same tasks with the context flooded by irrelevant material and decoy tools.

Each level wraps a fan-out or chain task: the request arrives after pages of
look-alike notes (inventory moves of other SKUs, reorganisations naming other
people) and the toolbox gains decoy tools with plausible names. The task, its
truth and its scorer are the wrapped task's; only what surrounds it changes, so
accuracy and cost can be compared level against level.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import RunResult, Tool, Toolbox
from .._tokens import count_tokens
from ._synthetic import ChainTask, FanoutTask
from ._task import OracleTurn, Score, Setup, Task, Turn

__all__ = ["ROT_LEVELS", "RotLevel", "RotTask", "rot_tasks"]


@dataclass(frozen=True, slots=True)
class RotLevel:
    name: str
    flood_tokens: int
    decoys: int


ROT_LEVELS = (
    RotLevel("clean", 0, 0),
    RotLevel("noisy", 4_000, 20),
    RotLevel("flooded", 32_000, 60),
)

_DECOYS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("get_stock_estimate", "Forecast stock of a product from last week's sales.",
     {"sku": "string"}),
    ("get_product_details", "Describe a product: name, size, supplier.", {"sku": "string"}),
    ("list_categories", "List the product categories of the store.", {}),
    ("reorder_product", "Place a reorder for a product.", {"sku": "string", "units": "integer"}),
    ("get_warehouse_bay", "Where in the warehouse a product is kept.", {"sku": "string"}),
    ("get_supplier", "The supplier of a product.", {"sku": "string"}),
    ("find_employee", "Find employees by name.", {"name": "string"}),
    ("get_team", "List the people who report to a manager.", {"email": "string"}),
    ("get_office", "The office an employee works from.", {"email": "string"}),
    ("get_weather", "Current weather in a city.", {"city": "string"}),
    ("convert_currency", "Convert an amount between currencies.",
     {"amount": "number", "source": "string", "target": "string"}),
    ("send_email", "Send an email.", {"to": "string", "subject": "string", "body": "string"}),
    ("search_documents", "Full-text search over the team wiki.", {"query": "string"}),
    ("get_calendar", "Events on a date.", {"date": "string"}),
    ("create_ticket", "Open a support ticket.", {"title": "string", "body": "string"}),
    ("translate_text", "Translate text.", {"text": "string", "language": "string"}),
)  # fmt: skip


def _decoy(index: int) -> Tool:
    name, description, params = _DECOYS[index % len(_DECOYS)]
    if index >= len(_DECOYS):
        name = f"{name}_v{index // len(_DECOYS) + 1}"
        description = f"{description} (legacy version {index // len(_DECOYS) + 1})"
    schema = {
        "type": "object",
        "properties": {p: {"type": kind} for p, kind in params.items()},
        "required": list(params),
    }

    def unrelated(**arguments: Any) -> dict[str, Any]:
        return {"status": "ok", "results": []}

    return Tool.from_schema(name, description, schema, unrelated)


_PREFIXES = ("GAR", "KIT", "LIG", "OFF", "OUT", "STO", "TEX", "WOR")
_PEOPLE = ("lena.berg", "marco.costa", "sofia.ndiaye", "yusuf.weber", "ines.silva", "piotr.berg")
_BOSSES = ("anna.keller", "felix.marin", "grace.obi", "tomas.ross")
_BEFORE = ("the CTO", "the COO", "finance")


def _flood_line(rng: random.Random) -> str:
    if rng.random() < 0.5:
        sku = f"{rng.choice(_PREFIXES)}-{rng.randrange(0x10000):04X}"
        day = f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        return (
            f"- {day}: moved {rng.randrange(1, 300)} units of {sku} from bay "
            f"{rng.randrange(1, 40)} to bay {rng.randrange(1, 40)}; count after the move: "
            f"{rng.randrange(0, 900)}."
        )
    who = f"{rng.choice(_PEOPLE)}{rng.randrange(10, 99)}@corp.example"
    boss = f"{rng.choice(_BOSSES)}{rng.randrange(10, 99)}@corp.example"
    return (
        f"- Reorg {rng.randrange(2019, 2025)}: {who} now reports to {boss} "
        f"(previously to {rng.choice(_BEFORE)})."
    )


def _flood(seed: int, tokens: int) -> str:
    """Notes that look like the tasks' data but are not: other SKUs, other people."""
    if tokens <= 0:
        return ""
    rng = random.Random(seed)
    lines = ["Background notes (pasted from the operations wiki):"]
    count = count_tokens(lines[0])
    while count < tokens:
        line = _flood_line(rng)
        lines.append(line)
        count += count_tokens(line) + 1
    return "\n".join(lines)


class RotTask(Task):
    """A fan-out or chain task surrounded by irrelevant material and decoy tools."""

    suite = "rot"

    def __init__(self, base: FanoutTask | ChainTask, level: RotLevel, seed: int = 0) -> None:
        self.base = base
        self.level = level
        self.seed = seed
        self.id = f"rot_{level.name}_{base.id}"
        self.category = f"{level.name}/{base.suite}"
        self.width = base.width
        self.max_rounds = base.max_rounds
        self.max_calls_per_turn = base.max_calls_per_turn

    def setup(self) -> Setup:
        setup = self.base.setup()
        material = _flood(self.seed * 7919 + (self.width or 0), self.level.flood_tokens)
        decoys = [_decoy(i) for i in range(self.level.decoys)]
        turns = []
        for turn in setup.turns:
            tools = Toolbox([*turn.tools, *decoys])
            text = f"{material}\n\n---\n\n{turn.text}" if material else turn.text
            turns.append(Turn(text, tools, turn.added))
        setup.turns = turns
        return setup

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        return self.base.oracle(setup, convention)

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        return self.base.score(setup, runs)


def rot_tasks(
    levels: Sequence[RotLevel] = ROT_LEVELS,
    fanout_widths: Sequence[int] = (10, 30),
    chain_lengths: Sequence[int] = (4, 10),
    *,
    seed: int = 0,
) -> list[Task]:
    bases: list[FanoutTask | ChainTask] = [
        *(FanoutTask("discovered", w, seed) for w in fanout_widths),
        *(ChainTask(n, seed) for n in chain_lengths),
    ]
    return [RotTask(base, level, seed) for level in levels for base in bases]
