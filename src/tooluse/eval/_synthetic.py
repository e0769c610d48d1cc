"""Synthetic suites with a known answer at any size: fan-out enumeration and call chains.

Fan-out: "check the stock of every product in a category and give the total"
needs one ``get_stock`` call per product, N of them, independent of each other.
In the ``discovered`` variant the products come from ``list_products``; in the
``listed`` variant the request names them. The run states the expected
cardinality (`Expect`), so a run that silently skips products ends ``truncated``.

Chain: "who is L levels above this person in the reporting chain" needs L
``get_employee`` calls, each on the manager the previous one returned: the
argument of every call depends on the result before it.

All data derive from a seed by hashing, so the same entry is the same on every
machine and the oracle can know every answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import Expect, RunResult, Tool, Toolbox
from ._metrics import CallMetrics, call_metrics
from ._oracle import MODULE, call_expression, signatures
from ._task import Call, OracleTurn, Score, Setup, Task, Turn

__all__ = [
    "CHAIN_LENGTHS",
    "FANOUT_VARIANTS",
    "FANOUT_WIDTHS",
    "ChainTask",
    "FanoutTask",
    "chain_tasks",
    "fanout_tasks",
]

FANOUT_VARIANTS = ("discovered", "listed")
FANOUT_WIDTHS = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200)
CHAIN_LENGTHS = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20)

_CATEGORIES = (
    "garden",
    "kitchen",
    "lighting",
    "office",
    "outdoor",
    "storage",
    "textiles",
    "workshop",
)
_FIRST = (
    "ada", "bruno", "chen", "dara", "emeka", "farah", "goran", "hana", "ivo", "jun",
    "kira", "lucas", "mira", "nadia", "omar", "priya", "quinn", "rosa", "sven", "tariq",
)  # fmt: skip
_LAST = (
    "abara", "bauer", "castro", "dubois", "eriksen", "fontaine", "gupta", "haddad",
    "ito", "jensen", "kowalski", "lindqvist", "moreau", "nakamura", "okafor", "petrov",
)  # fmt: skip
_TITLES = ("Engineer", "Team Lead", "Manager", "Senior Manager", "Director", "Vice President")


def digest(*parts: object) -> int:
    """A stable 64-bit number from the parts (the suites' only source of variety)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def numbers_in(text: str | None) -> set[int]:
    """Integers written in `text`, with or without thousands separators."""
    if not text:
        return set()
    return {int(m.replace(",", "")) for m in re.findall(r"\d[\d,]*\d|\d", text)}


# --- fan-out ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Catalog:
    category: str
    skus: tuple[str, ...]
    stock: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.stock.values())


def _catalog(seed: int, variant: str, width: int) -> _Catalog:
    # A wider catalog extends a narrower one, so token counts at different
    # widths differ only by the added products.
    category = _CATEGORIES[digest(seed, variant, "category") % len(_CATEGORIES)]
    prefix = category[:3].upper()
    skus: list[str] = []
    seen: set[str] = set()
    attempt = 0
    while len(skus) < width:
        sku = f"{prefix}-{digest(seed, variant, 'sku', attempt) % 0x10000:04X}"
        attempt += 1
        if sku not in seen:
            seen.add(sku)
            skus.append(sku)
    stock = {sku: digest(seed, "stock", sku) % 500 for sku in skus}
    return _Catalog(category, tuple(skus), stock)


def _record(catalog: _Catalog, sku: str, chars: int) -> dict[str, Any]:
    """A product's stock record of about `chars` characters: the count first, then bulk."""
    stock = catalog.stock[sku]
    record: dict[str, Any] = {"sku": sku, "stock": stock, "category": catalog.category}
    movements: list[str] = []
    day = 0
    while len(str(record)) + sum(len(m) + 4 for m in movements) < chars:
        day += 1
        moved = digest(sku, "moved", day) % 40
        movements.append(f"day {day}: {moved} units moved between warehouse A and B")
    record["movements"] = movements
    return record


def _sku(catalog: _Catalog, sku: str) -> str:
    """The catalog's key for `sku` as a model wrote it; `KeyError` if it names no product."""
    key = sku.strip().upper()
    if key not in catalog.stock:
        raise KeyError(f"no product with SKU {sku!r}")
    return key


def _fanout_tools(catalog: _Catalog, record_chars: int = 0) -> Toolbox:
    def list_products(category: str) -> list[str]:
        """List the SKU of every product in a category.

        Args:
            category: the product category, e.g. 'garden'
        """
        if category.strip().lower() != catalog.category:
            raise ValueError(f"no products in category {category!r}")
        return list(catalog.skus)

    def get_stock(sku: str) -> int:
        """Return how many units of a product are in stock.

        Args:
            sku: the product's SKU, e.g. 'GAR-1F2A'
        """
        return catalog.stock[_sku(catalog, sku)]

    def get_stock_record(sku: str) -> dict[str, Any]:
        """Return a product's stock record: its units in stock ('stock') and its movements.

        Args:
            sku: the product's SKU, e.g. 'GAR-1F2A'
        """
        return _record(catalog, _sku(catalog, sku), record_chars)

    if record_chars:
        # Large per-item results (data by reference): named get_stock like the plain one.
        return Toolbox([list_products, Tool.from_function(get_stock_record, name="get_stock")])
    return Toolbox([list_products, get_stock])


def _status_problem(run: RunResult) -> list[str]:
    """The problems of a run so far: it did not complete, or none."""
    if run.status != "completed":
        return [f"status {run.status}: {run.error or ''}".strip()]
    return []


def _score(metrics: CallMetrics, problems: list[str]) -> Score:
    """Correct when nothing went wrong; the detail says what did."""
    return metrics.score(correct=not problems, detail="; ".join(problems)[:500] or None)


class FanoutTask(Task):
    """Enumerate N products and total their stock."""

    suite = "fanout"

    def __init__(
        self,
        variant: str,
        width: int,
        seed: int = 0,
        *,
        record_chars: int = 0,
        result_limit: int | None = 6_000,
    ) -> None:
        if variant not in FANOUT_VARIANTS:
            raise ValueError(f"unknown fan-out variant {variant!r}")
        #: With a positive value, each ``get_stock`` result is a record of about this
        #: many characters whose ``stock`` field is the count (data by reference).
        self.record_chars = record_chars
        self.result_limit = result_limit
        self.variant = variant
        self.width = width
        self.seed = seed
        self.category = variant
        self.id = f"fanout_{variant}_{width}"
        self.catalog = _catalog(seed, variant, width)
        # Room for a model that makes its calls one per message.
        self.max_rounds = width + 5
        self.max_calls_per_turn = max(128, width + 16)

    @property
    def text(self) -> str:
        catalog = self.catalog
        if self.variant == "listed":
            return (
                f"Check the stock of each of these {self.width} products and tell me the "
                f"total number of units in stock: {', '.join(catalog.skus)}."
            )
        return (
            f"Check the stock of every product in the '{catalog.category}' category and "
            "tell me the total number of units in stock."
        )

    def setup(self) -> Setup:
        tools = _fanout_tools(self.catalog, self.record_chars)
        if self.variant == "listed":
            tools = Toolbox([t for t in tools if t.name == "get_stock"])
        expect = Expect(tool="get_stock", argument="sku", values=list(self.catalog.skus))
        return Setup(turns=[Turn(self.text, tools)], expect=[expect])

    def expected_calls(self) -> list[Call]:
        calls = [Call("get_stock", {"sku": sku}) for sku in self.catalog.skus]
        if self.variant == "discovered":
            calls.insert(0, Call("list_products", {"category": self.catalog.category}))
        return calls

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        catalog = self.catalog
        stock = [Call("get_stock", {"sku": sku}) for sku in catalog.skus]
        answer = f"The {self.width} products have {catalog.total} units in stock in total."
        get_stock = signatures(setup.turns[0].tools)["get_stock"].function
        # A record's count is its "stock" field; a plain result is the count.
        units = "s['stock'] for s in stock" if self.record_chars else "stock"
        if self.variant == "discovered":
            listing = Call("list_products", {"category": catalog.category})
            lister = signatures(setup.turns[0].tools)["list_products"]
            script = (
                f"import {MODULE}\n\n"
                f"skus = {call_expression(listing, lister)}\n"
                f"stock = {MODULE}.parallel({MODULE}.{get_stock}, "
                '[{"sku": sku} for sku in skus])\n'
                f"print(sum({units}))\n"
            )
            plan = (
                f"skus = {lister.function}(category={catalog.category!r})\n"
                f"stock = [{get_stock}(sku=sku) for sku in skus]\n"
                f"total = sum({units})\n"
            )
            return [OracleTurn(steps=[[listing], stock], script=script, answer=answer, plan=plan)]
        script = (
            f"import {MODULE}\n\n"
            f"skus = {list(catalog.skus)!r}\n"
            f"stock = {MODULE}.parallel({MODULE}.{get_stock}, "
            '[{"sku": sku} for sku in skus])\n'
            f"print(sum({units}))\n"
        )
        plan = (
            f"skus = {list(catalog.skus)!r}\n"
            f"stock = [{get_stock}(sku=sku) for sku in skus]\n"
            f"total = sum({units})\n"
        )
        return [OracleTurn(steps=[stock], script=script, answer=answer, plan=plan)]

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        run = runs[-1]
        made = [Call(c.name, c.arguments) for c in run.calls]
        metrics = call_metrics(self.expected_calls(), made)
        covered = {
            str(c.arguments.get("sku", "")).strip().upper()
            for c in run.calls
            if c.name == "get_stock" and c.ok
        }
        missing = [sku for sku in self.catalog.skus if sku not in covered]
        problems = _status_problem(run)
        if missing:
            problems.append(f"{len(missing)} of {self.width} products never checked")
        if self.catalog.total not in numbers_in(run.answer):
            problems.append(f"the answer does not state the total {self.catalog.total}")
        return _score(metrics, problems)


def fanout_tasks(
    variants: Sequence[str] = FANOUT_VARIANTS,
    widths: Sequence[int] = FANOUT_WIDTHS,
    *,
    seed: int = 0,
) -> list[Task]:
    return [FanoutTask(v, w, seed) for v in variants for w in widths]


# --- chains ----------------------------------------------------------------------


def _person(seed: int, email: str) -> dict[str, Any]:
    """The directory record for `email`: who they are and who they report to."""
    first, _, rest = email.partition(".")
    last = rest.split("@")[0].rstrip("0123456789")
    h = digest(seed, "manager", email)
    manager = (
        f"{_FIRST[h % len(_FIRST)]}.{_LAST[(h >> 8) % len(_LAST)]}{(h >> 16) % 90 + 10}"
        "@corp.example"
    )
    return {
        "email": email,
        "name": f"{first.title()} {last.title()}",
        "title": _TITLES[(h >> 24) % len(_TITLES)],
        "manager_email": manager,
    }


def _chain(seed: int, length: int) -> list[str]:
    """Emails from the start through `length` managers, with no one repeated."""
    attempt = 0
    while True:
        h = digest(seed, "start", length, attempt)
        start = f"{_FIRST[h % len(_FIRST)]}.{_LAST[(h >> 8) % len(_LAST)]}{(h >> 16) % 90 + 10}"
        emails = [f"{start}@corp.example"]
        for _ in range(length):
            emails.append(_person(seed, emails[-1])["manager_email"])
        if len(set(emails)) == len(emails):
            return emails
        attempt += 1


class ChainTask(Task):
    """Follow a reporting chain L levels up: L calls, each on the previous result."""

    suite = "chain"
    category = "manager_chain"

    def __init__(self, length: int, seed: int = 0) -> None:
        self.width = length
        self.seed = seed
        self.id = f"chain_{length}"
        self.emails = _chain(seed, length)
        self.max_rounds = length + 5

    @property
    def text(self) -> str:
        return (
            f"Who is {self.width} levels above {self.emails[0]} in the reporting chain? "
            "Each employee record names that person's manager. Answer with the email "
            "address of that person."
        )

    def setup(self) -> Setup:
        people = set(self.emails)
        seed = self.seed

        def get_employee(email: str) -> dict[str, Any]:
            """Look up an employee in the company directory.

            Args:
                email: the employee's email address
            """
            key = email.strip().lower()
            if key not in people:
                raise KeyError(f"no employee with email {email!r}")
            return _person(seed, key)

        tool = Tool.from_function(get_employee)
        return Setup(turns=[Turn(self.text, Toolbox([tool]))])

    def expected_calls(self) -> list[Call]:
        return [Call("get_employee", {"email": e}) for e in self.emails[:-1]]

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        calls = self.expected_calls()
        signature = signatures(setup.turns[0].tools)["get_employee"]
        lines = [f"import {MODULE}", "", f"e1 = {call_expression(calls[0], signature)}"]
        for step in range(2, len(calls) + 1):
            lines.append(
                f"e{step} = {MODULE}.{signature.function}(email=e{step - 1}['manager_email'])"
            )
        lines.append(f"print(e{len(calls)}['manager_email'])")
        plan = [f"e1 = {call_expression(calls[0], signature).removeprefix(MODULE + '.')}"]
        for step in range(2, len(calls) + 1):
            plan.append(f"e{step} = {signature.function}(email=e{step - 1}['manager_email'])")
        plan.append(f"boss = e{len(calls)}['manager_email']")
        target = self.emails[-1]
        return [
            OracleTurn(
                steps=[[call] for call in calls],
                script="\n".join(lines) + "\n",
                plan="\n".join(plan) + "\n",
                answer=f"{self.width} levels above {self.emails[0]} is {target}.",
            )
        ]

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        run = runs[-1]
        made = [Call(c.name, c.arguments) for c in run.calls]
        metrics = call_metrics(self.expected_calls(), made)
        target = self.emails[-1]
        problems = _status_problem(run)
        if target not in (run.answer or "").lower():
            problems.append(f"the answer does not name {target}")
        return _score(metrics, problems)


def chain_tasks(lengths: Sequence[int] = CHAIN_LENGTHS, *, seed: int = 0) -> list[Task]:
    return [ChainTask(length, seed) for length in lengths]
