"""Asking an MCP client's user about a call the server's approval policy deferred.

A server has nobody at a terminal, and its calls belong to no run that could
pause: the person who can decide is the user of the client that made the call.
MCP reaches them by elicitation. The client is sent a form with one yes/no
field, and its answer decides the call.

How it is sent depends on the protocol the client speaks:

- up to 2025-11-25, the server sends ``elicitation/create`` while the call is
  open, and waits for the answer;
- from 2026-07-28 on, the call returns an ``InputRequiredResult`` carrying the
  form and a state token; the client asks its user and calls again with the
  answer and the token. A token is the server's own, bound to the tool and
  arguments it was issued for, and used once: a replayed or foreign token asks
  again instead of deciding.

A client that cannot elicit, an answer that is not a clear yes, an error or no
answer within the timeout: each is a denial, with a reason the client's model
can read.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import OrderedDict
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from ..policy._approval import Approval, ApprovalRequest

__all__ = ["ClientAsking"]

#: The protocol from which a server asks by returning ``InputRequiredResult``.
_INPUT_REQUIRED_FROM = "2026-07-28"
#: The key of the one input request, in the result and in the client's answer.
_KEY = "approve"
#: Tokens waiting for an answer, at most (the oldest is dropped first).
_MAX_PENDING = 1024
_CAN_ELICIT = types.ClientCapabilities(elicitation=types.ElicitationCapability())


class ClientAsking:
    """Decides deferred calls by asking the calling client's user.

    Args:
        timeout: seconds a question may stay unanswered; then the call is denied.
    """

    def __init__(self, timeout: float = 300.0) -> None:
        self.timeout = timeout
        # token -> (the call's key, when the token lapses)
        self._pending: OrderedDict[str, tuple[str, float]] = OrderedDict()

    async def decide(
        self,
        context: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        request: ApprovalRequest,
    ) -> Approval | types.InputRequiredResult:
        """The user's decision, or (from 2026-07-28 on) the question to send them."""
        if not context.session.check_client_capability(_CAN_ELICIT):
            return Approval.deny(
                f"{request.tool} needs its user's approval, and this MCP client cannot ask "
                "its user (it declares no elicitation capability): the call was not run"
            )
        if context.protocol_version >= _INPUT_REQUIRED_FROM:
            return self._answered(params, request) or self._question(request)
        try:
            answer = await asyncio.wait_for(
                context.session.elicit_form(
                    _message(request), _FORM, related_request_id=context.request_id
                ),
                self.timeout,
            )
        except TimeoutError:
            return Approval.deny(f"the user gave no answer within {self.timeout:g} s")
        except Exception as exc:  # the client's failure to ask is a denial, not a crash
            return Approval.deny(f"the client could not ask its user: {exc}")
        return _decision(answer)

    def _question(self, request: ApprovalRequest) -> types.InputRequiredResult:
        now = time.monotonic()
        while self._pending and (
            len(self._pending) >= _MAX_PENDING or next(iter(self._pending.values()))[1] < now
        ):
            self._pending.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self._pending[token] = (request.key, now + self.timeout)
        form = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=_message(request), requested_schema=_FORM)
        )
        return types.InputRequiredResult(input_requests={_KEY: form}, request_state=token)

    def _answered(
        self, params: types.CallToolRequestParams, request: ApprovalRequest
    ) -> Approval | None:
        """The decision a retried call carries, if its token is ours, live and for this call."""
        token, responses = params.request_state, params.input_responses or {}
        if token is None or _KEY not in responses:
            return None
        issued = self._pending.get(token)
        if issued is None or issued[0] != request.key:
            return None  # unknown, used, or issued for another call: ask again
        del self._pending[token]
        if issued[1] < time.monotonic():
            return Approval.deny(f"the user gave no answer within {self.timeout:g} s")
        answer = responses[_KEY]
        if not isinstance(answer, types.ElicitResult):
            return Approval.deny("the client answered the approval with something else")
        return _decision(answer)


_FORM: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {
        "allow": {
            "type": "boolean",
            "title": "Run this call",
            "description": "Yes runs the call once, with the arguments shown.",
        }
    },
    "required": ["allow"],
}


def _message(request: ApprovalRequest) -> str:
    arguments = json.dumps(dict(request.arguments), ensure_ascii=False, default=str)
    return f"Allow {request.tool}({arguments})? {request.reason}."


def _decision(answer: types.ElicitResult) -> Approval:
    if answer.action == "accept" and (answer.content or {}).get("allow") is True:
        return Approval.allow()
    if answer.action == "accept":
        return Approval.deny("the user did not allow it")
    if answer.action == "decline":
        return Approval.deny("the user declined it")
    return Approval.deny("the user dismissed the question")
