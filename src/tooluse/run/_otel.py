"""OpenTelemetry export: a trace sink that turns a run's events into GenAI spans.

The spans follow the OpenTelemetry semantic conventions for generative AI:

    invoke_agent                       the run
    ├── chat {model}                   one per model request, with token usage
    ├── execute_tool {name}            one per call the model made
    └── execute_tool python            one per script (code convention)
        └── execute_tool {name}        the calls the script made

It is a sink like `JsonlTrace`: it builds spans after the fact from the events'
timestamps, so the loop does nothing different when OpenTelemetry is on, and
nothing at all when it is off. Arguments, results, messages and code are
recorded only when ``TOOLUSE_OTEL_CONTENT=1`` (they may hold private data).
Context offload and compress show as events on the run's span: the harness's
(`ContextMove` events) with the ids moved, the agent's with the id of its call.
So does the answer check (`AnswerChecked`, ``tooluse.answer_check``), with its
outcome, and its note with the content.

Needs the ``otel`` extra (``pip install 'tooluse[otel]'``). Without a tracer
provider of the caller's, spans go to an OTLP/HTTP exporter configured by the
standard ``OTEL_EXPORTER_OTLP_*`` and ``OTEL_*`` variables.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._exceptions import UsageError
from .._records import CallRecord, RejectedCall
from ..events import (
    CONTEXT_TOOLS,
    AnswerChecked,
    ApprovalNeeded,
    CallEnd,
    CallRejected,
    ContextMove,
    Event,
    Feedback,
    InternalError,
    ModelReply,
    ModelRequest,
    RunEnd,
    RunStart,
    ScriptEnd,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["OtelSink", "check_otel", "otel_enabled", "otel_sink"]

_lock = threading.Lock()


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def otel_enabled() -> bool:
    """Whether ``TOOLUSE_OTEL`` asks for export."""
    return _flag("TOOLUSE_OTEL")


_MISSING = "OpenTelemetry export needs the otel extra: pip install 'tooluse[otel]'"


def check_otel() -> None:
    """Raise `UsageError` now if the ``otel`` extra is not installed."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise UsageError(_MISSING) from exc


def _provider() -> TracerProvider:
    """The caller's global tracer provider if set, else one exporting OTLP over HTTP."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise UsageError(_MISSING) from exc
    configured = trace.get_tracer_provider()
    if not isinstance(configured, trace.ProxyTracerProvider):
        return configured
    with _lock:
        return _otlp_provider()


@functools.cache
def _otlp_provider() -> TracerProvider:
    """One per process: its batch processor exports in the background and at exit."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise UsageError(_MISSING) from exc
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "tooluse"}
    provider = SdkProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def otel_sink(provider: TracerProvider | None = None) -> OtelSink:
    """A sink for one run, on `provider` or the default one (see the module docstring)."""
    chosen = provider if provider is not None else _provider()
    tracer = chosen.get_tracer("tooluse")
    return OtelSink(tracer, content=_flag("TOOLUSE_OTEL_CONTENT"))


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _provider_name(model: str) -> str:
    """``gen_ai.provider.name`` from a model's trace name (``openai:gpt-4o`` → ``openai``)."""
    prefix, sep, _ = model.partition(":")
    return prefix if sep else "tooluse"


def _request_model(model: str) -> str:
    return model.partition(":")[2] or model


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


class OtelSink:
    """Builds one run's spans from its events (see the module docstring)."""

    def __init__(self, tracer: Tracer, *, content: bool = False) -> None:
        self.tracer = tracer
        self.content = content
        self._run: Span | None = None
        self._chat: Span | None = None
        self._model = "model"
        #: Calls a script made, held until the script's own event gives their parent.
        self._script_calls: list[CallEnd | CallRejected] = []

    def __call__(self, event: Event) -> None:
        match event:
            case RunStart():
                self._run_start(event)
            case RunEnd():
                self._run_end(event)
            case ModelRequest():
                self._model_request(event)
            case ModelReply():
                self._model_reply(event)
            case CallEnd() | CallRejected():
                if event.record.source == "script":
                    self._script_calls.append(event)
                else:
                    self._tool_span(event, self._run)
            case ScriptEnd(status=status) if status != "paused":
                # A paused script has no span: its calls join the run's (see `_run_end`).
                self._script(event)
            case Feedback(round=round_, text=text):
                attributes: dict[str, Any] = {"tooluse.round": round_}
                if self.content:
                    attributes["tooluse.text"] = text
                self._event("tooluse.feedback", event, attributes)
            case AnswerChecked(round=round_, outcome=outcome, note=note):
                attributes = {"tooluse.round": round_, "tooluse.answer_check.outcome": outcome}
                if self.content and note:
                    attributes["tooluse.text"] = note
                self._event("tooluse.answer_check", event, attributes)
            case ContextMove(by=by, ids=ids, call_id=None):
                # The harness's moves; the agent's are told with its call (`_tool_span`),
                # the attempt included when it failed.
                attributes = {"tooluse.context.by": by, "tooluse.context.ids": list(ids)}
                self._event(f"tooluse.context.{event.action}", event, attributes)
            case ApprovalNeeded(pending=pending):
                tools = [p.tool for p in pending]
                self._event("tooluse.approval_needed", event, {"tooluse.pending_tools": tools})
            case InternalError():
                self._event("tooluse.internal_error", event, {})
            case _:
                pass

    # -- the run ---------------------------------------------------------------------

    def _run_start(self, event: RunStart) -> None:
        self._model = event.model or "model"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": _provider_name(self._model),
            "gen_ai.request.model": _request_model(self._model),
            "tooluse.convention": event.convention,
            "tooluse.tools": list(event.tools),
        }
        if self.content:
            attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": event.task}]}],
                ensure_ascii=False,
            )
        self._run = self.tracer.start_span(
            "invoke_agent", attributes=attributes, start_time=_ns(event.t)
        )

    def _run_end(self, event: RunEnd) -> None:
        from opentelemetry.trace import Status, StatusCode

        end = _ns(event.t)
        status = event.status
        if self._chat is not None:
            # The model never answered this request.
            self._chat.set_status(Status(StatusCode.ERROR, event.error or ""))
            self._chat.set_attribute("error.type", "model_error")
            self._chat.end(end_time=end)
            self._chat = None
        self._flush_script_calls(None)
        run = self._run
        if run is None:
            return
        _set_usage(run, event.usage)
        run.set_attribute("tooluse.status", status)
        run.set_attribute("tooluse.rounds", event.rounds)
        run.set_attribute("tooluse.calls", event.calls)
        run.set_attribute("tooluse.rejected", event.rejected)
        if self.content and event.answer is not None:
            run.set_attribute(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": event.answer}],
                        }
                    ],
                    ensure_ascii=False,
                ),
            )
        if status in ("error", "cancelled"):
            run.set_attribute("error.type", status)
            run.set_status(Status(StatusCode.ERROR, event.error or status))
        run.end(end_time=end)
        self._run = None

    def _event(self, name: str, event: Event, attributes: dict[str, Any]) -> None:
        if self._run is not None:
            self._run.add_event(name, attributes, timestamp=_ns(event.t))

    def _parent(self, span: Span | None) -> Any:
        from opentelemetry.trace import set_span_in_context

        return set_span_in_context(span) if span is not None else None

    # -- model requests --------------------------------------------------------------

    def _model_request(self, event: ModelRequest) -> None:
        name = _request_model(self._model)
        self._chat = self.tracer.start_span(
            f"chat {name}",
            context=self._parent(self._run),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": _provider_name(self._model),
                "gen_ai.request.model": name,
                "tooluse.round": event.round,
            },
            start_time=_ns(event.t),
        )

    def _model_reply(self, event: ModelReply) -> None:
        chat = self._chat
        if chat is None:
            return
        _set_usage(chat, event.usage)
        if event.usage.get("source"):
            chat.set_attribute("tooluse.usage.source", str(event.usage["source"]))
        if event.finish_reason:
            chat.set_attribute("gen_ai.response.finish_reasons", [event.finish_reason])
        if self.content:
            chat.set_attribute("gen_ai.output.messages", _text([event.message]))
        chat.end(end_time=_ns(event.t))
        self._chat = None

    # -- calls and scripts -----------------------------------------------------------

    def _script(self, event: ScriptEnd) -> None:
        from opentelemetry.trace import Status, StatusCode

        end = _ns(event.t)
        start = end - _ns(event.duration_s)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "python",
            "gen_ai.tool.call.id": event.id,
            "gen_ai.tool.type": "function",  # the runtime runs it, as it runs calls
            "tooluse.round": event.round,
            "tooluse.script.status": event.status,
            "tooluse.script.calls": event.calls,
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = event.code
            attributes["gen_ai.tool.call.result"] = event.stdout
        span = self.tracer.start_span(
            "execute_tool python",
            context=self._parent(self._run),
            attributes=attributes,
            start_time=start,
        )
        if event.status != "ok":
            span.set_attribute("error.type", event.status)
            span.set_status(Status(StatusCode.ERROR, event.error or ""))
        self._flush_script_calls(span)
        span.end(end_time=end)

    def _flush_script_calls(self, parent: Span | None) -> None:
        held, self._script_calls = self._script_calls, []
        for call in held:
            self._tool_span(call, parent if parent is not None else self._run)

    def _tool_span(self, event: CallEnd | CallRejected, parent: Span | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        record = event.record
        name = record.name
        ran = record if isinstance(record, CallRecord) else None
        if ran is None or not ran.started_at:
            start = end = _ns(event.t)
        else:
            start = _ns(ran.started_at)
            end = start + _ns(ran.duration_s)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": record.id,
            "gen_ai.tool.type": "function",
            "tooluse.round": record.round,
            "tooluse.source": record.source,
        }
        if ran is not None and ran.replayed:
            attributes["tooluse.replayed"] = True
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _text(record.arguments)
            if ran is not None:
                attributes["gen_ai.tool.call.result"] = _text(ran.result)
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._parent(parent),
            attributes=attributes,
            start_time=start,
        )
        if isinstance(record, RejectedCall):
            span.set_attribute("error.type", f"rejected_{record.kind}")
            span.set_status(Status(StatusCode.ERROR, record.error))
        elif record.error is not None:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, record.error))
        span.end(end_time=end)
        moves = CONTEXT_TOOLS.get(name)
        if moves is not None and ran is not None and self._run is not None:
            attributes = {"tooluse.context.by": "agent", "tooluse.context.call_id": record.id}
            if self.content:
                attributes["tooluse.context.arguments"] = _text(record.arguments)
            self._run.add_event(f"tooluse.context.{moves.action}", attributes, timestamp=end)


def _set_usage(span: Span, usage: Mapping[str, Any]) -> None:
    """The token counts of a request (or a whole run) as OpenTelemetry's GenAI attributes."""
    span.set_attribute("gen_ai.usage.input_tokens", int(usage.get("input_tokens", 0)))
    span.set_attribute("gen_ai.usage.output_tokens", int(usage.get("output_tokens", 0)))
