"""Records of calls: executed (`CallRecord`) and refused before execution (`RejectedCall`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._written import read, write
from .media import render_value

__all__ = [
    "HANDLE",
    "Answered",
    "CallRecord",
    "Outcome",
    "RejectedCall",
    "ScriptRecord",
    "call_identity",
    "call_key",
    "canonical_arguments",
    "names_handle",
    "render_result",
]


def _text_encoder(
    *, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")
) -> Callable[[object], str]:
    """``json.dumps(value, ensure_ascii=False, default=str)`` with these options, text for
    text, set up once.

    `JSONEncoder.encode` works out its options again on every call, which costs more than
    writing a call's arguments or a small result. This keeps the options and makes the C
    encoder (not public API: where it is missing, `JSONEncoder.encode` serves) for each
    value with a fresh table of the containers being written, so a circular value is
    still refused with ValueError, and calls from several threads never share one.
    """
    encoder = json.JSONEncoder(
        sort_keys=sort_keys, ensure_ascii=False, separators=separators, default=str
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    item_separator, key_separator = separators
    write_string = json.encoder.encode_basestring
    default = encoder.default

    def encode(value: object) -> str:
        chunks = make(
            {}, default, write_string, None, key_separator, item_separator, sort_keys, False, True
        )
        return "".join(chunks(value, 0))

    return encode


_canonical = _text_encoder(sort_keys=True)
_result_text = _text_encoder(separators=(",", ":"))


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as one text: equal texts exactly when the arguments are equal.

    Key order does not count; values JSON cannot hold count by their ``str``.
    """
    return _canonical(arguments)


def call_identity(name: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """What makes two calls the same call: the tool's name and its canonical arguments."""
    return name, canonical_arguments(arguments)


def call_key(name: str, arguments: Mapping[str, Any]) -> str:
    """`call_identity` as a hash, for keys that are stored (an approval is bound to it).

    Its text is fixed: approvals stored by earlier versions must still match.
    """
    text = json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


#: A call's result kept by reference, as a model names it in arguments: the whole string,
#: ``@r3-5f1c0a`` (result 3 of the run tagged 5f1c0a; see `tooluse.dispatch._handles`).
HANDLE = re.compile(r"@r[0-9]+-[0-9a-f]{6}")


def names_handle(value: Any) -> bool:
    """Whether `value` (JSON data) holds a string that is exactly a handle, at any depth."""
    if isinstance(value, str):
        return HANDLE.fullmatch(value) is not None
    if isinstance(value, dict):
        return any(names_handle(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(names_handle(v) for v in value)
    return False


def render_result(value: Any) -> str:
    """The text a model sees for a tool's return value.

    Media (images, audio, embedded resources, in their JSON form) are shown as their
    short description and reference, never as base64: the record keeps the bytes.
    """
    if isinstance(value, str):
        return value
    text = _result_text(value)
    if '"mimeType"' in text or '"resource"' in text:
        value = render_value(value)
        if isinstance(value, str):
            return value
        return _result_text(value)
    return text


@dataclass(slots=True)
class CallRecord:
    """One call the runtime executed (or answered from the ledger, see `replayed`).

    `result` is the tool's return value as JSON-compatible data; `error` is
    the text the model was shown when the tool raised or timed out.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    round: int = 0
    started_at: float = 0.0
    duration_s: float = 0.0
    repairs: tuple[str, ...] = ()
    replayed: bool = False
    source: str = "json"
    #: How many times the tool ran for this call: more than one when a tool declaring
    #: ``retries`` failed and was run again (the record is the last attempt's).
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def content(self) -> str:
        """The tool message content this call produced."""
        return f"Error: {self.error}" if self.error is not None else render_result(self.result)

    def to_dict(self) -> dict[str, Any]:
        # Written out by hand: every traced call is written, and this is four times
        # quicker than `write`; a test holds it equal to the written form `from_dict` reads.
        return {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "round": self.round,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "repairs": list(self.repairs),
            "replayed": self.replayed,
            "source": self.source,
            # Written only when the tool ran more than once: a trace of a release that
            # had no retries reads back as it was written.
            **({"attempts": self.attempts} if self.attempts != 1 else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        """The record `to_dict` wrote; `UsageError` saying what is wrong with one that is not."""
        return read(cls, data)


@dataclass(slots=True)
class RejectedCall:
    """A call refused before anything ran; `error` is what the model was shown.

    `arguments` is the model's raw argument text (cut to a few hundred
    characters: it may be what made the call unusable). `kind` is ``invalid``
    (the call cannot be used as written) or ``denied`` (an approval policy, or
    the tool's ``callers``, did not let it run).
    """

    id: str
    name: str
    arguments: str
    error: str
    round: int = 0
    source: str = "json"
    kind: str = "invalid"

    @property
    def content(self) -> str:
        return f"Error: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return write(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RejectedCall:
        """The record `to_dict` wrote; `UsageError` saying what is wrong with one that is not."""
        return read(cls, data)


Outcome = CallRecord | RejectedCall


@dataclass(slots=True)
class ScriptRecord:
    """One script the runtime ran for the code convention.

    The calls it made are in `RunResult.calls` / `RunResult.rejected` like JSON
    calls (their ids start with this script's id). `status` is the sandbox's:
    ``ok``, ``error``, ``timeout``, ``killed`` or ``sandbox_error``. `replayed`
    holds its calls answered from the failed script before it (see `Ledger`);
    the model is told which they were.
    """

    id: str
    code: str
    status: str
    stdout: str
    error: str | None
    round: int = 0
    calls: int = 0
    truncated: bool = False
    duration_s: float = 0.0
    repairs: tuple[str, ...] = ()
    replayed: tuple[CallRecord, ...] = ()

    @property
    def content(self) -> str:
        """The tool message content this script produced."""
        parts: list[str] = []
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.error:
            parts.append(f"Error: {self.error}")
        if not parts:
            parts.append(
                "(the script printed nothing: print the values you need)"
                if self.status == "ok"
                else f"(the script ended with status {self.status})"
            )
        if self.replayed:
            parts.append(
                "Note: these calls were not run again, because they had succeeded in the "
                "failed script before this one; they returned their earlier results: "
                + ", ".join(_as_python(c) for c in self.replayed)
            )
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The written form: its fields, the calls it replayed by their ids."""
        return {
            **write(self, exclude={"replayed"}, mode="json"),
            "replayed": [c.id for c in self.replayed],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], calls: dict[str, CallRecord]) -> ScriptRecord:
        """The record `to_dict` wrote; ``calls`` are the run's calls by id.

        `UsageError` saying what is wrong with one that is not.
        """
        if not isinstance(data, Mapping):
            return read(cls, data)  # refused, saying what it is
        replayed = tuple(calls[i] for i in data.get("replayed", ()) if i in calls)
        return read(cls, {**data, "replayed": replayed})


def _as_python(call: CallRecord) -> str:
    arguments = ", ".join(f"{name}={value!r}" for name, value in call.arguments.items())
    return f"{call.name}({arguments})"


@dataclass(frozen=True, slots=True)
class Answered:
    """A call a paused script had been answered, as the script made it.

    Resuming runs the script again and answers these again, in order, without
    running them (see `ScriptRunner`). ``kind`` is None for a success (``value``)
    or the `ToolError` kind the script saw, with ``message``.
    """

    call_id: str
    tool: str
    arguments: dict[str, Any]
    """As the script sent them, by the schema's names."""
    value: Any = None
    kind: str | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return write(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answered:
        """The answer `to_dict` wrote; `UsageError` saying what is wrong with one that is not."""
        return read(cls, data)
