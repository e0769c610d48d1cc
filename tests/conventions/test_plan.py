"""The plan convention: a plan checked whole before anything runs, then run in waves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, Approval, Toolbox, tool
from tooluse.conventions import PlanConvention, PlanError, parse_plan
from tooluse.eval import Bench, BenchConfig, SuiteOptions
from tooluse.models import ScriptedModel


class Shop:
    """Prices and stock, counting every call that really ran."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []

    def toolbox(self) -> Toolbox:
        @tool
        def list_skus(category: str) -> list[str]:
            """The SKUs of a category.

            Args:
                category: the category name
            """
            self.made.append(("list_skus", {"category": category}))
            if category != "garden":
                raise ValueError(f"no category {category!r}")
            return ["A1", "B2", "C3"]

        @tool
        def get_item(sku: str) -> dict[str, Any]:
            """One item's price and stock.

            Args:
                sku: the item's SKU
            """
            self.made.append(("get_item", {"sku": sku}))
            if sku not in {"A1", "B2", "C3"}:
                raise KeyError(f"no item {sku!r}")
            return {"sku": sku, "price": {"A1": 3, "B2": 5, "C3": 7}[sku], "stock": 10}

        return Toolbox([list_skus, get_item])


LANDLORD = "DE89370400440532013000"


class Bank:
    """A payee list and a payment tool with side effects; `sent` is what really left."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, float]] = []

    def toolbox(self) -> Toolbox:
        @tool(side_effects=True)
        def send_money(recipient: str, amount: float) -> str:
            """Send money to an IBAN.

            Args:
                recipient: the IBAN to pay
                amount: how much, in euros
            """
            self.sent.append((recipient, amount))
            return f"sent {amount:g} to {recipient}"

        @tool
        def get_contacts() -> dict[str, str]:
            """The user's saved payees."""
            return {"landlord": LANDLORD}

        return Toolbox([send_money, get_contacts])


def fenced(plan: str) -> dict[str, str]:
    return {"content": f"```plan\n{plan}\n```"}


def run(agents: list[Agent], tools: Toolbox, replies: list[dict[str, Any]], **kw: Any) -> Any:
    agent = Agent(ScriptedModel(replies), tools, convention="plan", **kw)
    agents.append(agent)
    return agent.run("What is the garden category worth?")


GOOD = (
    'skus = list_skus(category="garden")\n'
    "items = [get_item(sku=s) for s in skus]\n"
    'total = sum(i["price"] * i.stock for i in items)'
)


def test_a_plan_runs_its_steps_and_the_model_sees_the_result(agents: list[Agent]) -> None:
    shop = Shop()
    result = run(agents, shop.toolbox(), [fenced(GOOD), {"content": "150"}])
    assert result.status == "completed" and result.rounds == 2
    assert [name for name, _ in shop.made] == ["list_skus", "get_item", "get_item", "get_item"]
    assert {c.source for c in result.calls} == {"plan"}
    report = result.messages[-2].content
    assert report.endswith("Result:\n150")


def test_independent_steps_run_together() -> None:
    # Each tool waits for the other at a barrier: run one after the other, they never return.
    barrier = asyncio.Barrier(2)

    @tool
    async def left() -> str:
        """Left."""
        await barrier.wait()
        return "L"

    @tool
    async def right() -> str:
        """Right."""
        await barrier.wait()
        return "R"

    plan = "a = left()\nb = right()\nboth = a + b"
    with Agent(
        ScriptedModel([fenced(plan), {"content": "LR"}]),
        Toolbox([left, right]),
        convention="plan",
        tool_timeout=60,
    ) as agent:
        result = agent.run("join them")
    assert result.status == "completed"
    assert [c.ok for c in result.calls] == [True, True]
    assert result.messages[-2].content.endswith("Result:\nLR")


@pytest.mark.parametrize(
    ("plan", "line", "words"),
    [
        ('a = get_item(sku=b["sku"])\nb = get_item(sku="A1")', 1, "only defined later, at line 2"),
        ('a = get_item(sku=b["sku"])\nb = get_item(sku=a["sku"])', 1, "a cycle"),
        ('a = get_item(sku="A1")\nb = get_itme(sku="B2")', 2, "did you mean get_item"),
        ('a = get_item(sku="A1", colour="red")', 1, "no parameter 'colour'"),
        ("a = get_item()", 1, "missing required argument(s): sku"),
        ("a = get_item(sku=3)", 1, "must be string"),
        ('a = get_item(sku=price["A1"])', 1, "which no step above defines"),
        ('a = get_item(sku="A1")\nb = a.__class__', 2, "starting with '_'"),
        ('a = get_item(sku="A1")\nb = open("/etc/passwd")', 2, "no function 'open'"),
        ('a = get_item(sku="A1")\nfor x in a:\n    pass', 2, "not a `for` statement"),
        ('First I look up A1:\na = get_item(sku="A1")', 1, "this is not a plan"),
        ('a = get_item(sku="A1")\na = get_item(sku="B2")', 2, "assigned twice"),
        ("rate = 0.9\neur = 100 * rate", None, "calls no tool"),
    ],
)
def test_a_bad_plan_is_answered_with_line_and_step_and_nothing_runs(
    agents: list[Agent], plan: str, line: int | None, words: str
) -> None:
    shop = Shop()
    reply = {"content": plan} if plan.startswith("First") else fenced(plan)
    result = run(agents, shop.toolbox(), [reply, {"content": "gave up"}])
    assert shop.made == [] and result.calls == []
    feedback = result.messages[3].content
    assert words in feedback and (line is None or f"line {line}" in feedback)
    assert "Nothing was run" in feedback


def test_ten_thousand_steps_are_refused_before_anything_runs(agents: list[Agent]) -> None:
    shop = Shop()
    plan = "\n".join(f's{i} = get_item(sku="A1")' for i in range(10_000))
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "gave up"}])
    assert shop.made == []
    assert "at most 200 steps and this one has 10,000" in result.messages[3].content


def test_a_missing_field_fails_its_step_by_name_at_run_time(agents: list[Agent]) -> None:
    shop = Shop()
    plan = 'a = get_item(sku="A1")\nb = get_item(sku=a["colour"])\nc = b["price"]'
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "?"}])
    report = result.messages[3].content
    assert "b (line 2) failed: argument 'sku'" in report and "no field 'colour'" in report
    assert "fields: sku, price, stock" in report
    assert "c (line 3) not run: it needs b" in report
    assert [name for name, _ in shop.made] == ["get_item"]


def test_a_failed_step_leaves_its_siblings_and_a_corrected_plan_reuses_what_ran(
    agents: list[Agent],
) -> None:
    shop = Shop()
    first = 'a = get_item(sku="A1")\nb = get_item(sku="ZZ")\nc = a["price"] + b["price"]'
    second = 'a = get_item(sku="A1")\nb = get_item(sku="B2")\nc = a["price"] + b["price"]'
    result = run(agents, shop.toolbox(), [fenced(first), fenced(second), {"content": "8"}])
    report = result.messages[3].content
    assert "a (line 1) done" in report
    assert "b (line 2) failed: get_item(sku='ZZ')" in report and "no item 'ZZ'" in report
    assert "c (line 3) not run" in report
    # A1 ran once: the corrected plan took its result from the first plan.
    assert shop.made == [("get_item", {"sku": "A1"}), ("get_item", {"sku": "ZZ"}),
                         ("get_item", {"sku": "B2"})]  # fmt: skip
    assert "1 reused from an earlier plan" in result.messages[5].content
    assert result.messages[5].content.endswith("Result:\n8")
    assert result.status == "completed"


def test_hostile_expressions_fail_with_a_message_not_a_hung_host(agents: list[Agent]) -> None:
    shop = Shop()
    plan = 'a = get_item(sku="A1")\nb = "x" * 10 ** 9'
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "no"}])
    assert "b (line 2) failed" in result.messages[3].content
    assert "too large" in result.messages[3].content


def test_prose_is_the_answer_and_a_plan_outside_a_fence_is_read() -> None:
    tools = Shop().toolbox()
    convention = PlanConvention()
    convention.prepare(tools, None)
    program = parse_plan(GOOD, tools)
    assert [s.kind for s in program.steps] == ["call", "map", "value"]
    assert [s.needs for s in program.steps] == [(), ("skus",), ("items",)]
    with pytest.raises(PlanError) as caught:
        parse_plan("x = 1\n" * 201, tools)
    assert "at most 200 steps" in str(caught.value)


def test_a_denied_plan_call_fails_its_step_and_a_deferred_one_pauses_and_resumes(
    agents: list[Agent],
) -> None:
    bank = Bank()
    plan = 'payees = get_contacts()\npaid = send_money(recipient=payees["landlord"], amount=900)'
    denied = Agent(
        ScriptedModel([fenced(plan), {"content": "not paid"}]),
        bank.toolbox(),
        convention="plan",
        approval=lambda _: Approval.deny("no payments today"),
    )
    agents.append(denied)
    result = denied.run("pay the rent")
    assert bank.sent == []
    assert "paid (line 2) failed" in result.messages[3].content
    assert "no payments today" in result.messages[3].content

    agent = Agent(
        ScriptedModel([fenced(plan), {"content": "paid"}]),
        bank.toolbox(),
        convention="plan",
        approval=lambda _: Approval.defer(),
    )
    agents.append(agent)
    paused = agent.run("pay the rent")
    assert paused.status == "needs_approval" and bank.sent == []
    (request,) = paused.pending
    assert request.tool == "send_money" and request.arguments["recipient"] == LANDLORD
    done = agent.resume(paused, {request.call_id: True})
    assert done.status == "completed" and bank.sent == [(LANDLORD, 900)]
    # get_contacts ran once, before the pause; the plan went on from there.
    assert [c.name for c in done.calls] == ["get_contacts", "send_money"]


@pytest.mark.parametrize("suite", ["fanout", "chain"])
def test_the_oracle_scores_everything_in_plan_and_chains_take_two_rounds(
    tmp_path: Path, suite: str
) -> None:
    config = BenchConfig(
        suite=suite,
        out=tmp_path,
        conventions=("json", "plan"),
        options=SuiteOptions(widths=(3, 10) if suite == "fanout" else (), limit=None),
    )
    rows = Bench(config).run()
    assert rows and all(r.correct for r in rows)
    if suite == "chain":
        rounds = {(r.convention, r.width): r.rounds for r in rows}
        for (convention, width), used in rounds.items():
            if convention == "plan":
                assert used == 2
                if width is not None and width >= 3:
                    assert used * 2 <= rounds[("json", width)]
