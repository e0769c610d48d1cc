"""What a bench invocation is: the suite, model, conventions and how it runs.

Its own module so the local runner and the Ray executor share it without
importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._exceptions import UsageError
from ..models import Model
from ._driver import CallPolicy
from ._suites import SuiteOptions

__all__ = [
    "CONVENTIONS",
    "DEFAULT_CONVENTIONS",
    "EXECUTORS",
    "ORACLE",
    "TRACES",
    "BenchConfig",
    "RayOptions",
    "check_choices",
    "model_label",
]

ORACLE = "oracle"
#: Where `BenchConfig.traces` puts each entry's run trace, under the output directory.
TRACES = "traces"
CONVENTIONS = ("json", "code", "text", "plan", "auto")
# What runs unless asked otherwise: the two the cost model compares.
DEFAULT_CONVENTIONS = ("json", "code")
# The cost model's equations compare JSON calling with programmatic calling.
_COSTMODEL_CONVENTIONS = ("json", "code", "plan")

EXECUTORS = ("local", "ray")


def check_choices(
    what: str, given: Sequence[str], known: Sequence[str], *, hint: str = "use some of"
) -> None:
    """Refuse names of `what` (``conventions``, ``suites``) that are not `known`, or none."""
    unknown = [name for name in given if name not in known]
    if unknown or not given:
        raise UsageError(
            f"unknown {what} {', '.join(unknown) or '(none)'}; "
            f"{hint} {', '.join(known)}, comma-separated"
        )


@dataclass(frozen=True, slots=True)
class RayOptions:
    """How a sweep runs on Ray (``executor="ray"``).

    `address` is ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; None starts a
    local Ray for the sweep and stops it afterwards. `cpus` is what each entry
    declares (a fraction lets several share a CPU); `actors` runs entries in
    actors that keep a warmed-up model (None: for local GGUF models only).
    `rate_limit` caps a hosted provider's requests per minute across the whole
    cluster, with bursts of up to `rate_burst`.
    """

    address: str | None = None
    cpus: float = 1.0
    actors: bool | None = None
    rate_limit: float | None = None
    rate_burst: int = 1

    def __post_init__(self) -> None:
        if self.cpus <= 0:
            raise UsageError("--ray-cpus must be positive")
        if self.rate_limit is not None and self.rate_limit <= 0:
            raise UsageError("--rate-limit must be positive (model requests per minute)")
        if self.rate_burst < 1:
            raise UsageError("the rate limit's burst must be at least 1")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """One bench invocation.

    `model` is a spec (``oracle``, ``openai:…``, ``scripted:…``) or, in-process
    only, a `Model`; rows are labelled with the spec or the model's name.
    `conventions` are any of ``json``, ``code`` and ``text`` (the cost model
    takes only the first two).
    """

    suite: str
    out: Path
    model: str | Model = ORACLE
    conventions: tuple[str, ...] = DEFAULT_CONVENTIONS
    options: SuiteOptions = field(default_factory=SuiteOptions)
    workers: int = 1
    base_url: str | None = None
    retry_errors: bool = False
    #: How the json convention asks for calls (tool choice, parallel calls).
    calls: CallPolicy = field(default_factory=CallPolicy)
    #: ``local`` (this process, or a process pool of `workers`) or ``ray``; with
    #: Ray, `workers` 0 means as many entries at once as the cluster has CPUs.
    executor: str = "local"
    ray: RayOptions = field(default_factory=RayOptions)
    #: Write each entry's run trace (every request, reply and call) to
    #: ``out/traces/CONVENTION/ENTRY.jsonl``; `tooluse view out` shows them.
    traces: bool = False

    def __post_init__(self) -> None:
        check_choices("conventions", self.conventions, CONVENTIONS)
        if self.suite == "costmodel" and not set(self.conventions) <= set(_COSTMODEL_CONVENTIONS):
            raise UsageError(
                "the cost model fits JSON against code (Patel et al. 2026) and takes "
                "--conventions json, code or json,code; to measure text on the same tasks, run "
                "`tooluse bench fanout --conventions json,code,text` (its summary fits text too)"
            )
        if self.executor not in EXECUTORS:
            raise UsageError(f"unknown executor {self.executor!r}; use local or ray")
        if self.executor == "ray":
            if self.workers < 0:
                raise UsageError("--workers must be at least 1 (or 0 with Ray: every CPU)")
            return
        if self.ray != RayOptions():
            raise UsageError("--ray-address, --ray-cpus and --rate-limit need --executor ray")
        if self.workers < 1:
            raise UsageError("--workers must be at least 1")
        if self.workers > 1 and not isinstance(self.model, str):
            raise UsageError("worker processes need a model spec, not a model object")

    @property
    def label(self) -> str:
        return model_label(self.model, self.calls)

    @property
    def trace_dir(self) -> Path | None:
        return self.out / TRACES if self.traces else None


def model_label(model: str | Model, calls: CallPolicy | None = None) -> str:
    """How rows name a model: its spec or name, and any call policy other than the default."""
    name = model if isinstance(model, str) else model.name
    suffix = calls.label if calls is not None else ""
    return f"{name} {suffix}" if suffix else name
