"""The plan convention: a plan checked whole before anything runs, then run in waves."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, Approval, Limits, Toolbox, tool
from tooluse.conventions import PlanConvention, PlanError, PlanEvaluationError, parse_plan
from tooluse.conventions._plan_eval import evaluate
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
        limits=Limits(tool_timeout=60),
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


def doubling(first: str, times: int) -> str:
    """Steps that double a value `times` times, each step using the one before."""
    lines = [f"d0 = {first}"]
    lines += [f"d{i} = d{i - 1} {'+'} d{i - 1}" for i in range(1, times + 1)]
    return "\n".join(lines)


def squaring(first: str, times: int) -> str:
    lines = [f"q0 = {first}"]
    lines += [f"q{i} = q{i - 1} * q{i - 1}" for i in range(1, times + 1)]
    return "\n".join(lines)


# Each of these, run as written, takes the host's time or memory without end.
EXHAUSTING = {
    "power of a power": "b = 10 ** 1000\nc = b ** 1000",
    "repeated squaring": squaring("10 ** 100", 24),
    "format width": "p = a['price']\nc = f'{p:>1000000000}'",
    "percent width": "p = a['price']\nc = '%01000000000d' % p",
    "string doubling": doubling("a['sku'] * 1000", 30),
    "sum of lists": "p = a['price']\nc = sum([[p] * 100000] * 5000, [])",
    "copies in a comprehension": 'b = "x" * 100000\nc = [b + b for i in range(50000)]',
    # Not long to compute, but more digits than Python writes out: the report could not be.
    "a number too long to write": "b = (10 ** 1000) ** 4 * 10 ** 300",
}


@pytest.mark.parametrize("steps", EXHAUSTING.values(), ids=EXHAUSTING.keys())
def test_an_exhausting_expression_fails_its_step_with_the_limit_and_the_run_goes_on(
    agents: list[Agent], steps: str
) -> None:
    shop = Shop()
    plan = f'a = get_item(sku="A1")\n{steps}'
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "too big"}])
    report = result.messages[3].content
    assert "The plan did not finish" in report
    failed = [line for line in report.splitlines() if " failed: " in line]
    assert len(failed) == 1 and "limit" in failed[0], report
    assert result.status == "completed" and result.answer == "too big"


def test_the_step_budget_is_the_plans_not_each_expressions(agents: list[Agent]) -> None:
    # Each argument takes some 15,000 steps: fine alone, 300 of them are too many.
    shop = Shop()
    plan = (
        'a = get_item(sku="A1")\n'
        "many = list(range(300))\n"
        "b = [get_item(sku=str(len([j for j in range(5000)]))) for i in many]"
    )
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "no"}])
    report = result.messages[3].content
    assert "b (line 3) failed" in report and "steps" in report and "limit" in report
    assert [name for name, _ in shop.made] == ["get_item"]


def test_the_bytes_a_plan_creates_are_bounded_across_its_steps(agents: list[Agent]) -> None:
    # Every copy is within the size of one value; together they are not.
    shop = Shop()
    copies = "\n".join(f"t{i} = s + '{i}'" for i in range(40))
    plan = f'a = get_item(sku="A1")\ns = "x" * 4000000\n{copies}'
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "no"}])
    report = result.messages[3].content
    assert "t0 (line 3) done" in report
    failed = [line for line in report.splitlines() if " failed: " in line]
    assert failed and all("limit" in line for line in failed), report


HOSTILE_ENV = {
    "n": 7,
    "f": 1.5,
    "s": "x" * 100_000,
    "w": 10**9,
    "big": list(range(100_000)),
    # Ten megabytes when written out, though it holds one string a hundred times.
    "huge": ["x" * 100_000] * 100,
}


@pytest.mark.parametrize(
    "expression",
    [
        "10 ** 10 ** 10",
        "2 ** 100000",
        "(10 ** 1000) ** 1000",
        "(10 ** 3000) * (10 ** 3000)",
        "10 ** 4300",
        "int('9' * 4300) + 1",
        "b'x' * 10 ** 9",
        "[0] * 10 ** 9",
        "(0,) * 10 ** 9",
        "10 ** 9 * 'x'",
        "[[n] * 1000] * 1000",
        "str(10 ** 4000) * 10000",
        "s * 100",
        "(s * 50) + (s * 50)",
        "f'{n:>1000000000}'",
        "f'{f:.1000000000f}'",
        "f'{n:{w}}'",
        "f'{s:*^100000000}'",
        "f'{s}{s}' * 50",
        "f'{huge}'",
        "str(huge)",
        "'%s' % (huge,)",
        "'%01000000000d' % n",
        "'%*d' % (w, n)",
        "'%.1000000000f' % f",
        "'%(k)1000000000s' % {'k': s}",
        "b'%01000000000d' % n",
        "'%(k)s' * 100 % {'k': s}",
        "round(n, -1000000000)",
        "sum([[n]] * 50000, [])",
        "sum([(n,)] * 50000, ())",
        "[s + s for i in range(50000)]",
        "[i for i in range(100000) for j in range(100000)]",
        "[x in big for x in big]",
        "[big == list(big) for i in range(100000)]",
        "[sorted(big) for i in range(1000)]",
        "list(range(10 ** 9))",
        "range(10 ** 9)",
        "list(s * 70)",
        "set(s * 70)",
        "[dict(zip(big[:1000], big[:1000])) for i in range(100000)]",
        "[(i, s) for i in range(100000)]",
    ],
)
def test_every_way_to_exhaust_the_host_is_refused_by_a_limit(expression: str) -> None:
    with pytest.raises(PlanEvaluationError) as caught:
        evaluate(ast.parse(expression, mode="eval").body, HOSTILE_ENV)
    assert "limit" in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 ** 100", 2**100),
        ("10 ** 4000 // 10 ** 3999", 10),
        ("len(str(10 ** 4299))", 4_300),
        ("f'{n:>5}|{f:.2f}|{n:,}|{s[:3]!r}'", "    7|1.50|7|'xxx'"),
        ("'%05d %.1f %s' % (n, f, 'ok')", "00007 1.5 ok"),
        ("'%(a)s-%(a)s' % {'a': n}", "7-7"),
        ("round(1234, -2)", 1200),
        ("sum([[1], [2]], [])", [1, 2]),
        ("sum(x * 2 for x in big[:4])", 12),
        ("len([i for i in range(100000)])", 100_000),
        ("len(s + s)", 200_000),
        ("sorted({3, 1, 2})", [1, 2, 3]),
        ("max(big)", 99_999),
        ("dict(zip(['a', 'b'], [1, 2]))", {"a": 1, "b": 2}),
        ("list(enumerate('ab', 1))", [(1, "a"), (2, "b")]),
        ("str([1, 'a'])", "[1, 'a']"),
        ("str(big)[:5]", "[0, 1"),
        ("len(huge)", 100),
        ("99_999 in big", True),
    ],
)
def test_ordinary_expressions_are_within_the_limits(expression: str, value: Any) -> None:
    assert evaluate(ast.parse(expression, mode="eval").body, HOSTILE_ENV) == value


@pytest.mark.parametrize(
    "plan",
    [
        "a = " + "+".join(["1"] * 100_000),
        "a = " + "-" * 200_000 + "1",
        "a = get_item(sku=str(" + "+".join(["1"] * 2_000) + "))",
    ],
)
def test_a_plan_nested_too_deeply_is_answered_not_raised(agents: list[Agent], plan: str) -> None:
    shop = Shop()
    result = run(agents, shop.toolbox(), [fenced(plan), {"content": "gave up"}])
    assert result.status == "completed" and shop.made == []
    assert "nested too deeply" in result.messages[3].content


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
