"""Where a run stopped for approval: one of three shapes, tagged by ``kind``.

::

    Paused = PausedTurn     a turn of the model's calls: all of them, which had ended
           | PausedScript   a script: its code, and what its calls had been answered
           | PausedPlan     a plan: its code, and which of its steps' calls had ended

Each shape holds exactly what resuming it needs, and the loop resumes each by its
own path (`tooluse.run._loop`). What all three share is the approval step's memory
(``denied``, ``provenance``, ``scope``), so a resumed run, in this process or
another, decides as the paused one would have, and the pause's ``id``, which
`ApprovalStore` uses to resume each paused state once.

The written form is defined once, by pydantic over these dataclasses, and carries
``version``. `paused_from_dict` reads the current version and the untagged form
written before there was one (version 0); any other version is refused by name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from .._exceptions import ResumeError
from .._messages import ToolCall
from .._records import Answered
from .._written import version_of

__all__ = [
    "PAUSED_VERSION",
    "Paused",
    "PausedPlan",
    "PausedScript",
    "PausedTurn",
    "paused_from_dict",
    "paused_to_dict",
]

#: The version of the written form `paused_to_dict` produces.
PAUSED_VERSION = 1
#: The versions `paused_from_dict` reads: 0 is the untagged form of earlier releases.
READ_VERSIONS = (0, 1)


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True, kw_only=True)
class _Pause:
    task: str
    round: int
    #: Denials the run remembers, by call key (see `tooluse.policy._approval.call_key`).
    denied: Mapping[str, str] = field(default_factory=dict)
    #: The run's text by trust (`Provenance.to_dict`), when the policy tracks it.
    provenance: dict[str, Any] | None = None
    #: The run's scope (`tooluse.policy._scope`), kept so a resumed run is held to it.
    scope: tuple[str, ...] | None = None
    #: This pause, in every copy of it: `Agent.resume` uses it once (see `ApprovalStore`).
    id: str = field(default_factory=_new_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class PausedTurn(_Pause):
    """A turn of the model's calls: ``calls`` all of them, ``done`` the ids that had ended."""

    kind: Literal["turn"] = "turn"
    calls: tuple[ToolCall, ...] = ()
    done: tuple[str, ...] = ()
    #: Feedback the turn adds after its results (sent once the turn ends).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PausedScript(_Pause):
    """A script: run again on resume, its earlier calls answered from ``answered``."""

    kind: Literal["script"] = "script"
    script_id: str
    code: str
    repairs: tuple[str, ...] = ()
    answered: tuple[Answered, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PausedPlan(_Pause):
    """A plan: read again on resume; the calls in ``done`` had ended and are not run again."""

    kind: Literal["plan"] = "plan"
    plan_id: str
    code: str
    done: tuple[str, ...] = ()


Paused = PausedTurn | PausedScript | PausedPlan


@functools.cache
def _written() -> TypeAdapter[Paused]:
    # Built on first use, not at import: building it costs more than the rest of this
    # module, and only a run that pauses or resumes needs it.
    return TypeAdapter(
        Annotated[PausedTurn | PausedScript | PausedPlan, Field(discriminator="kind")]
    )


def paused_to_dict(paused: Paused) -> dict[str, Any]:
    """The written form: JSON values, with ``version`` and ``kind``."""
    return {"version": PAUSED_VERSION, **_written().dump_python(paused, mode="json")}


def paused_from_dict(data: Mapping[str, Any]) -> Paused:
    """The paused state `paused_to_dict` (or an earlier release) wrote.

    Raises `ResumeError` naming the version for a version this release does not
    read, and saying what is wrong with a state that is not one.
    """
    version = version_of(
        data,
        "the paused state",
        READ_VERSIONS,
        error=ResumeError,
        advice="resume it with the release that wrote it",
    )
    # A state written without an id (before pauses had ids, or with it removed) is named
    # by its content: every copy of it is then one pause, resumed once.
    pause = (
        data.get("id")
        or "saved-"
        + hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:32]
    )
    try:
        if version == 0:
            return _from_version_0(data, str(pause))
        fields = {k: v for k, v in data.items() if k != "version"}
        return _written().validate_python({**fields, "id": str(pause)})
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise ResumeError(f"the paused state (version {version}) cannot be read: {exc}") from exc


def _from_version_0(data: Mapping[str, Any], pause: str) -> Paused:
    """The untagged form: ``plan`` and ``script_id`` told the three shapes apart."""
    common: dict[str, Any] = {
        "id": pause,
        "task": str(data["task"]),
        "round": int(data["round"]),
        "denied": dict(data.get("denied") or {}),
        "provenance": data.get("provenance"),
        "scope": tuple(data["scope"]) if data.get("scope") is not None else None,
    }
    script_id = data.get("script_id")
    if data.get("plan") and script_id is not None:
        return PausedPlan(
            **common,
            plan_id=str(script_id),
            code=str(data.get("code", "")),
            done=tuple(data.get("done", ())),
        )
    if script_id is not None:
        return PausedScript(
            **common,
            script_id=str(script_id),
            code=str(data.get("code", "")),
            repairs=tuple(data.get("repairs", ())),
            answered=tuple(Answered.from_dict(a) for a in data.get("answered", ())),
        )
    return PausedTurn(
        **common,
        calls=tuple(
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in data.get("calls", ())
        ),
        done=tuple(data.get("done", ())),
        notes=tuple(data.get("notes", ())),
    )
