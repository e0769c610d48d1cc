"""A scriptable Anthropic Messages API server on loopback, for backend tests.

The HTTP side is `ChatServer`'s (queued replies, recorded requests). On top,
every request is checked against the rules of the real API that a client can
break (roles, block shapes, every ``tool_use`` answered by a ``tool_result``
first thing in the next user message, a named tool choice naming a tool …);
a request that breaks one is answered 400 as the API would, and the reason is
kept in `violations` so tests can assert there were none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._chat_server import ChatServer, Received, Reply, Stream

__all__ = [
    "MessagesServer",
    "Received",
    "Reply",
    "error_body",
    "message",
    "text",
    "tool_use",
]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": input}


def message(
    *content: dict[str, Any],
    stop_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A Messages API reply body holding `content` blocks."""
    if stop_reason is None:
        uses_tools = any(block.get("type") == "tool_use" for block in content)
        stop_reason = "tool_use" if uses_tools else "end_turn"
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 10, "output_tokens": 5},
    }


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class MessagesServer(ChatServer):
    """Serves queued Messages API replies on 127.0.0.1; checks every request."""

    def __init__(self) -> None:
        super().__init__()
        self.fallback = Reply(500, error_body("test server: no reply queued", "api_error"))
        self.violations: list[str] = []

    @property
    def base_url(self) -> str:
        # The SDK adds /v1/messages itself.
        return f"http://127.0.0.1:{self.port}"

    def _next(self, received: Received) -> Reply | Stream:
        problem = check_request(received)
        if problem is None:
            return super()._next(received)
        with self._lock:
            self.requests.append(received)
            self.violations.append(problem)
        status = 404 if problem.startswith("not found") else 400
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        return Reply(status, error_body(problem, kind))


def check_request(received: Received) -> str | None:
    """What the real API would reject in this request, or None."""
    if received.path != "/v1/messages":
        return f"not found: {received.path}"
    try:
        body = received.json
    except ValueError:
        return "the body is not JSON"
    if not isinstance(body, Mapping):
        return "the body is not a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: must be a positive integer"
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: must be a string or a list of text blocks"
    tool_names = _check_tools(body.get("tools"))
    if isinstance(tool_names, str):
        return tool_names
    problem = _check_tool_choice(body.get("tool_choice"), tool_names)
    if problem is not None:
        return problem
    return _check_messages(body.get("messages"))


#: The API's rule for a tool's name.
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _check_tools(tools: object) -> set[str] | str:
    if tools is None:
        return set()
    if not isinstance(tools, list):
        return "tools: must be a list"
    names: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            return f"tools.{index}.name: field required"
        if not _TOOL_NAME.fullmatch(tool["name"]):
            return f"tools.{index}.name: String should match pattern '{_TOOL_NAME.pattern}'"
        schema = tool.get("input_schema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            return f"tools.{index}.input_schema: must be an object schema"
        problem = _check_input_examples(tool.get("input_examples", []), schema)
        if problem is not None:
            return f"tools.{index}.input_examples{problem}"
        names.add(tool["name"])
    return names


def _check_input_examples(examples: object, schema: Mapping[str, Any]) -> str | None:
    """A list of input objects, each valid against the tool's input_schema."""
    import jsonschema

    if not isinstance(examples, list):
        return ": must be a list"
    for index, example in enumerate(examples):
        if not isinstance(example, Mapping):
            return f".{index}: must be an object"
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(example)
        )
        if error is not None:
            return f".{index}: does not match input_schema: {error.message}"
    return None


def _check_tool_choice(choice: object, tool_names: set[str]) -> str | None:
    if choice is None:
        return None
    if not isinstance(choice, Mapping) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: type must be one of auto, any, tool, none"
    if not tool_names and choice["type"] in ("any", "tool"):
        return "tool_choice: requires tools"
    if choice["type"] == "tool" and choice.get("name") not in tool_names:
        return f"tool_choice.name: no tool named {choice.get('name')!r}"
    return None


def _blocks(content: object, where: str) -> list[Mapping[str, Any]] | str:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else f"{where}: must be non-empty"
    if not isinstance(content, list) or not content:
        return f"{where}: must be a non-empty string or list of blocks"
    for index, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            return f"{where}.{index}: not a content block"
        if block["type"] == "text" and not block.get("text"):
            return f"{where}.{index}: text content blocks must be non-empty"
    return content


def _check_messages(messages: object) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    pending: list[str] = []
    for index, item in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(item, Mapping) or item.get("role") not in ("user", "assistant"):
            return f"{where}.role: must be 'user' or 'assistant'"
        if index == 0 and item["role"] != "user":
            return "messages.0.role: the first message must use the user role"
        blocks = _blocks(item.get("content"), f"{where}.content")
        if isinstance(blocks, str):
            return blocks
        if item["role"] == "assistant":
            if pending:
                return f"{where}: tool_use ids were found without tool_result blocks: {pending}"
            uses = _tool_uses(blocks)
            if isinstance(uses, str):
                return f"{where}.content: {uses}"
            pending = uses
            continue
        problem = _check_results(blocks, pending, where)
        if problem is not None:
            return problem
        pending = []
    if pending:
        return f"the last message has tool_use ids without tool_result blocks: {pending}"
    return None


def _tool_uses(blocks: Sequence[Mapping[str, Any]]) -> list[str] | str:
    ids: list[str] = []
    for block in blocks:
        if block["type"] == "tool_result":
            return "tool_result blocks belong in user messages"
        if block["type"] == "tool_use":
            if not isinstance(block.get("input"), Mapping):
                return "tool_use.input: must be an object"
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                return "tool_use: id and name are required"
            ids.append(block["id"])
    return ids


def _check_results(
    blocks: Sequence[Mapping[str, Any]], pending: Sequence[str], where: str
) -> str | None:
    answered: list[str] = []
    seen_other = False
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            return f"{where}.content.{index}: tool_use blocks belong in assistant messages"
        if block["type"] != "tool_result":
            seen_other = True
            continue
        if seen_other:
            return f"{where}.content.{index}: tool_result blocks must come first"
        call_id = block.get("tool_use_id")
        if call_id not in pending:
            return f"{where}.content.{index}: unexpected tool_use_id {call_id!r}"
        content = block.get("content")
        if content is not None and not isinstance(content, str | list):
            return f"{where}.content.{index}.content: must be a string or a list of blocks"
        if "is_error" in block and not isinstance(block["is_error"], bool):
            return f"{where}.content.{index}.is_error: must be a boolean"
        answered.append(call_id)
    missing = [i for i in pending if i not in answered]
    if missing:
        return f"{where}: tool_use ids were found without tool_result blocks: {missing}"
    return None
