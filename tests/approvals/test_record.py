"""The record equals what ran: what a policy is shown cannot change a call or the run's record."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tooluse import Agent, Approval, ApprovalRequest, RunResult, Toolbox, tool
from tooluse.models import ScriptedModel

from ._bank import call, calls, defer, fenced

TO = "alice@example.com"
MAIL = {"to": TO, "cc": ["bob@example.com"], "body": "The minutes are attached."}


def mailer(received: list[dict[str, Any]]) -> Toolbox:
    @tool(side_effects=True)
    def send_mail(to: str, cc: list[str], body: str) -> str:
        """Send a mail.

        Args:
            to: the recipient's address
            cc: addresses to copy
            body: the text
        """
        received.append({"to": to, "cc": list(cc), "body": body})
        return "sent"

    return Toolbox([send_mail])


def mail_run(
    agents: list[Agent], policy: Any, *, convention: str = "json", mails: int = 1
) -> tuple[RunResult, list[dict[str, Any]]]:
    """A run that sends `mails` mails under `policy`; its result and what the tool received."""
    received: list[dict[str, Any]] = []
    if convention == "code":
        sends = "".join(
            f"try:\n    print(tools.send_mail(**{MAIL!r}))\n"
            "except tools.ToolError as exc:\n    print(exc.kind)\n"
            for _ in range(mails)
        )
        replies = [fenced("import tools\n" + sends), {"content": "done"}]
    else:
        replies = [call(f"c{i}", "send_mail", MAIL) for i in range(mails)]
        replies.append({"content": "done"})
    agent = Agent(ScriptedModel(replies), mailer(received), convention=convention, approval=policy)
    agents.append(agent)
    return agent.run("send the minutes"), received


def ran_as_recorded(result: RunResult, received: list[dict[str, Any]]) -> bool:
    return [dict(c.arguments) for c in result.calls] == received


EDITS: dict[str, Callable[[ApprovalRequest], None]] = {
    # A redaction meant for the log, an edit that does not fit the schema, a nested one.
    "redact": lambda r: r.arguments.__setitem__("to", "***"),  # type: ignore[attr-defined]
    "invalid": lambda r: r.arguments.__setitem__("cc", "not a list"),  # type: ignore[attr-defined]
    "nested": lambda r: r.arguments["cc"].append("eve@example.com"),
    "drop": lambda r: r.arguments.pop("body"),  # type: ignore[attr-defined]
}


@pytest.mark.parametrize("convention", ["json", "code"])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_policy_cannot_edit_the_arguments_in_place(
    agents: list[Agent], edit: str, convention: str
) -> None:
    def policy(request: ApprovalRequest) -> bool:
        EDITS[edit](request)
        return True

    result, received = mail_run(agents, policy, convention=convention)
    assert ran_as_recorded(result, received)
    # The edit fails in the policy, and a policy that fails denies: nothing ran.
    assert received == [] and result.calls == []
    (record,) = result.approvals
    assert (record.decision, record.by) == ("deny", "failure")
    assert record.error is not None and "read-only" in record.error
    assert "Approval.allow(arguments)" in record.error
    assert dict(record.arguments) == MAIL


def test_other_arguments_are_given_explicitly_checked_and_recorded(agents: list[Agent]) -> None:
    redacted = {**MAIL, "to": "***"}
    result, received = mail_run(agents, lambda r: Approval.allow({**r.arguments, "to": "***"}))
    assert received == [redacted] and ran_as_recorded(result, received)
    (record,) = result.approvals
    assert dict(record.arguments) == MAIL and record.edited == redacted
    # Arguments that do not fit the schema are refused: nothing runs, the refusal says what.
    result, received = mail_run(agents, lambda r: Approval.allow({**r.arguments, "cc": "x"}))
    assert received == [] and result.calls == []
    (refused,) = result.rejected
    assert refused.kind == "invalid" and json.loads(refused.arguments)["cc"] == "x"


def test_the_arguments_given_to_allow_are_copied(agents: list[Agent]) -> None:
    # A policy keeping what it approved with cannot change the call, or its record, later.
    given: list[Approval] = []

    def policy(request: ApprovalRequest) -> Approval:
        for earlier in given:  # the call approved before has run by now
            assert earlier.arguments is not None
            earlier.arguments["to"] = "mallory@example.com"
            earlier.arguments["cc"].append("eve@example.com")
        edited = {**request.arguments, "cc": [*request.arguments["cc"]]}
        approval = Approval.allow(edited)
        edited["cc"].append("eve@example.com")
        edited["to"] = "mallory@example.com"
        given.append(approval)
        return approval

    result, received = mail_run(agents, policy, mails=2)
    assert received == [MAIL, MAIL] and ran_as_recorded(result, received)
    assert [dict(a.edited or {}) for a in result.approvals] == [MAIL, MAIL]


def test_the_run_so_far_shown_to_a_policy_is_a_copy(agents: list[Agent]) -> None:
    def policy(request: ApprovalRequest) -> bool:
        assert request.run is not None
        for earlier in request.run.calls:
            earlier.result = "falsified"
            earlier.arguments["to"] = "***"  # type: ignore[index]
        for message in request.run.messages:
            message.content = "falsified"
        return True

    result, received = mail_run(agents, policy, mails=2)
    assert ran_as_recorded(result, received)
    # The first call ran and its record stands; the second's policy failed on its edit.
    assert received == [MAIL] and result.calls[0].result == "sent"
    assert all(m.content != "falsified" for m in result.messages)
    assert [(a.decision, a.by) for a in result.approvals] == [
        ("allow", "policy"),
        ("deny", "failure"),
    ]


def test_a_pending_request_is_read_only_and_its_copies_too(agents: list[Agent]) -> None:
    received: list[dict[str, Any]] = []
    agent = Agent(
        ScriptedModel([calls(("c1", "send_mail", MAIL)), {"content": "done"}]),
        mailer(received),
        approval=defer,
    )
    agents.append(agent)
    result = agent.run("send the minutes")
    (request,) = result.pending
    for pending in (
        request,
        copy.deepcopy(request),
        RunResult.from_dict(result.to_dict()).pending[0],
    ):
        with pytest.raises(TypeError, match="read-only"):
            pending.arguments["to"] = "***"  # type: ignore[index]
        with pytest.raises(TypeError, match="read-only"):
            pending.arguments["cc"].append("eve@example.com")
        assert pending.arguments == MAIL
    # What a person decides with is an argument of resume, checked and recorded as it ran.
    done = agent.resume(result, {"c1": {**request.arguments, "body": "See the minutes."}})
    assert received == [{**MAIL, "body": "See the minutes."}] and ran_as_recorded(done, received)
