"""Four typed finance tools over a ledger: balance, bills, currency, payments.

The ledger is the run's dependency, not a global: each tool that reads or pays
takes a `RunContext[Ledger]` (the model never sees it), and each run is given its
own, ``agent.run(task, deps=Ledger())``. So two users' runs at once never touch
each other's money, and every eval run starts from the same balances and bills,
whatever an earlier run paid (the eval file names ``deps: ...:Ledger``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from typing_extensions import TypedDict

from tooluse import RunContext, Toolbox, tool

Account = Literal["checking", "savings"]
Currency = Literal["USD", "EUR", "GBP", "CHF", "JPY"]

# Units of each currency one US dollar buys.
PER_USD: dict[str, float] = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "CHF": 0.88, "JPY": 150.0}


class Balance(TypedDict):
    account: str
    amount: float
    currency: str


class Bill(TypedDict):
    id: str
    payee: str
    amount: float
    currency: str
    due: str
    paid: bool


class Payment(TypedDict):
    bill_id: str
    payee: str
    amount_usd: float
    account: str
    new_balance: float
    confirmation: str


def _bills() -> dict[str, Bill]:
    return {
        "B1": Bill(id="B1", payee="Northwind Power", amount=84.2, currency="USD",
                   due="2026-03-05", paid=False),
        "B2": Bill(id="B2", payee="Fibernet", amount=45.0, currency="USD",
                   due="2026-03-10", paid=False),
        "B3": Bill(id="B3", payee="Harbor Rentals", amount=1200.0, currency="USD",
                   due="2026-03-01", paid=True),
        "B4": Bill(id="B4", payee="Telco Europe", amount=30.0, currency="EUR",
                   due="2026-03-12", paid=False),
    }  # fmt: skip


def _convert(amount: float, from_currency: str, to_currency: str) -> float:
    return round(amount / PER_USD[from_currency] * PER_USD[to_currency], 2)


@dataclass
class Ledger:
    """The accounts and bills one run works on (amounts in USD)."""

    balances: dict[str, float] = field(
        default_factory=lambda: {"checking": 1250.0, "savings": 8400.0}
    )
    bills: dict[str, Bill] = field(default_factory=_bills)


@tool
def balance(ctx: RunContext[Ledger], account: Account) -> Balance:
    """Return the balance of one of my accounts.

    Args:
        account: Which account
    """
    ledger = ctx.deps
    return Balance(account=account, amount=ledger.balances[account], currency="USD")


@tool
def list_bills(
    ctx: RunContext[Ledger], status: Literal["due", "paid", "all"] = "due"
) -> list[Bill]:
    """List my bills, each with its id, payee, amount, currency and due date.

    Args:
        status: Only bills still due, only paid ones, or all
    """
    return [
        Bill(**bill)
        for bill in ctx.deps.bills.values()
        if status == "all" or bill["paid"] == (status == "paid")
    ]


@tool
def convert(amount: float, from_currency: Currency, to_currency: Currency) -> float:
    """Convert money between currencies at today's rate, rounded to cents.

    Args:
        amount: How much, in from_currency
        from_currency: ISO 4217 code the amount is in
        to_currency: ISO 4217 code to convert to
    """
    return _convert(amount, from_currency, to_currency)


@tool(side_effects=True)
def pay_bill(ctx: RunContext[Ledger], bill_id: str, account: Account = "checking") -> Payment:
    """Pay a bill in full from an account; bills in other currencies are paid in USD.

    Args:
        bill_id: The bill's id, e.g. 'B1'
        account: The account to pay from
    """
    ledger = ctx.deps
    bill = ledger.bills.get(bill_id.strip().upper())
    if bill is None:
        raise ValueError(f"no bill {bill_id!r}; ids: {', '.join(ledger.bills)}")
    if bill["paid"]:
        raise ValueError(f"bill {bill['id']} is paid already")
    cost = _convert(bill["amount"], bill["currency"], "USD")
    if cost > ledger.balances[account]:
        raise ValueError(f"{account} holds {ledger.balances[account]:.2f} USD, less than {cost}")
    ledger.balances[account] = round(ledger.balances[account] - cost, 2)
    bill["paid"] = True
    return Payment(
        bill_id=bill["id"],
        payee=bill["payee"],
        amount_usd=cost,
        account=account,
        new_balance=ledger.balances[account],
        confirmation=f"CONF-{bill['id']}",
    )


#: The four tools; give each run its `Ledger` as ``deps``.
toolbox = Toolbox([balance, list_bills, convert, pay_bill])
