"""Running a sweep's entries on a Ray cluster (``tooluse bench … --executor ray``).

The driver, the process that runs `Bench`, submits the entries and receives
their rows as they finish; `Bench` appends each to ``results.jsonl`` exactly as
on the local path, so resuming, the summary and the plots do not know where a
row was made. Each worker process rebuilds the suite from the same options (or
receives the task objects once) and keeps its context, the model and a sandbox,
for every entry it runs.

- Entries run as Ray tasks declaring `num_cpus`, several to a task when they
  are quick (the oracle's take a millisecond, a Ray task a few). A model that
  warms up, a local GGUF file, runs in actors instead: each one loads the model
  once and runs entry after entry.
- A worker that dies mid-entry costs that entry one more try, alone in a fresh
  task or a fresh actor; a second death becomes the entry's error row, and the
  sweep goes on. A row reaches the driver only once, whole.
- With `rate_limit`, the model requests of a hosted provider pass one token
  bucket, an actor shared by every worker, so the whole cluster stays under
  the provider's limit.

Ray is an optional extra (``tooluse[ray]``); only this module imports it, and
only when a sweep asks for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import UsageError
from ..models import Model, ModelRequest, ModelResponse, resolve_model
from ._config import BenchConfig
from ._entry import EntryContext, base_row, run_entry
from ._row import Row
from ._suites import build_tasks
from ._task import Task

__all__ = ["RATE_LIMITED", "TokenBucket", "needs_warm_up", "ray_rows"]

INSTALL_HINT = "pip install 'tooluse[ray]'"
#: Providers whose requests a `rate_limit` paces.
RATE_LIMITED = ("openai", "anthropic")
#: Seconds without a row before the driver says what it waits for, then between notices.
NOTICE_AFTER_S = 5.0
NOTICE_EVERY_S = 15.0
#: Tries of an entry whose worker dies: the first run and one retry.
TRIES = 2
#: Seconds of entries one Ray task aims to hold, and the most entries it holds.
BATCH_S = 0.25
MAX_BATCH = 64

_Key = tuple[str, str]  # suite, entry id


def import_ray() -> ModuleType:
    """Ray, or a `UsageError` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise UsageError(
            f"--executor ray needs Ray, which is not installed here: {INSTALL_HINT}"
        ) from exc
    return ray


def needs_warm_up(model: str | Model) -> bool:
    """Whether a model loads something heavy once per process (a local GGUF file)."""
    return isinstance(model, str) and model.partition(":")[0] in ("local", "local-unconstrained")


# --- the token bucket ---------------------------------------------------------------


class TokenBucket:
    """A rate limit as a bucket of `burst` tokens refilled at `per_minute`.

    `reserve` takes a token now, or reserves the next one, and returns the
    seconds the caller must wait before using it; reservations are handed out
    in order, so callers never bunch up past the rate. On the cluster one
    instance lives in an actor and every worker asks it. `slots` gives, on
    the bucket's clock, the time each token handed out could first be used.
    """

    def __init__(
        self, per_minute: float, burst: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if per_minute <= 0 or burst < 1:
            raise UsageError("a rate limit needs a positive rate and a burst of at least 1")
        self.interval = 60.0 / per_minute
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock()
        self._slots: list[float] = []

    def reserve(self) -> float:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) / self.interval)
        self._stamp = now
        self._tokens -= 1
        delay = max(0.0, -self._tokens * self.interval)
        self._slots.append(now + delay)
        return delay

    def slots(self) -> list[float]:
        """When each token handed out so far could first be used, in the order they were."""
        return list(self._slots)


class _Paced(Model):
    """A model whose every request first takes a token from the shared bucket."""

    def __init__(self, inner: Model, bucket: Any, name: str) -> None:
        self.inner = inner
        self.bucket = bucket
        self.name = name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        delay: float = await self.bucket.reserve.remote()
        if delay > 0:
            await asyncio.sleep(delay)
        return await self.inner.respond(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def provider(model: str | Model) -> str | None:
    """The rate-limited provider a model spec calls, if any."""
    kind = model.partition(":")[0] if isinstance(model, str) else ""
    return kind if kind in RATE_LIMITED else None


# --- what a worker holds ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Sweep:
    """What every worker needs to run this sweep's entries (sent to each once)."""

    id: str
    config: BenchConfig
    #: The task objects when the caller gave them (an ObjectRef), else None: build the suite.
    tasks: Any
    bucket: Any


# A worker process keeps the context and tasks of the sweep it last ran.
_HELD: dict[str, Any] = {}


def _held(sweep: _Sweep) -> tuple[EntryContext, dict[_Key, Task]]:
    if _HELD.get("id") != sweep.id:
        old: EntryContext | None = _HELD.get("context")
        if old is not None:
            old.close()
        loop = _HELD.get("loop")
        _HELD.clear()
        if loop is not None:
            _HELD["loop"] = loop
        config = sweep.config
        model: str | Model = config.model
        if sweep.bucket is not None and isinstance(model, str):
            model = _Paced(resolve_model(model, base_url=config.base_url), sweep.bucket, model)
        elif needs_warm_up(model):
            spec = str(model)
            model = resolve_model(spec, base_url=config.base_url)
            # llama.cpp takes every core by default; on a shared node an actor
            # keeps to the CPUs it declared, or the actors thrash each other.
            model.threads = max(1, round(config.ray.cpus))  # type: ignore[attr-defined]
            model.name = spec
        context = EntryContext(
            model, base_url=config.base_url, calls=config.calls, traces=config.trace_dir
        )
        if sweep.tasks is not None:
            import ray

            tasks: list[Task] = ray.get(sweep.tasks)
        else:
            tasks = build_tasks(config.suite, config.options)
        _HELD.update(id=sweep.id, context=context, tasks={(t.suite, t.id): t for t in tasks})
    return _HELD["context"], _HELD["tasks"]


def _loop() -> asyncio.AbstractEventLoop:
    # One loop per worker process for all its entries: a hosted model's HTTP
    # client keeps connections bound to the loop that opened them.
    loop: asyncio.AbstractEventLoop | None = _HELD.get("loop")
    if loop is None or loop.is_closed():
        loop = _HELD["loop"] = asyncio.new_event_loop()
    return loop


def _run_one(sweep: _Sweep, key: _Key, convention: str) -> Row:
    context, tasks = _held(sweep)
    return _loop().run_until_complete(run_entry(tasks[key], convention, context))


def _run_batch(sweep: _Sweep, keys: Sequence[tuple[_Key, str]]) -> list[Row]:
    context, tasks = _held(sweep)

    async def run() -> list[Row]:
        return [await run_entry(tasks[key], convention, context) for key, convention in keys]

    return _loop().run_until_complete(run())


class _EntryWorker:
    """An actor that holds a warmed-up model and runs entries one after another."""

    def __init__(self, sweep: _Sweep) -> None:
        self.sweep = sweep
        _held(sweep)

    def run(self, key: _Key, convention: str) -> Row:
        return _run_one(self.sweep, key, convention)


# --- connecting ---------------------------------------------------------------------


def _host_port(address: str) -> tuple[str, int] | None:
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _check_reachable(address: str) -> None:
    target = _host_port(address)
    if address != "auto" and target is None:
        raise UsageError(f"--ray-address takes auto, HOST:PORT or ray://HOST:PORT, got {address!r}")
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=3).close()
    except OSError as exc:
        raise UsageError(
            f"cannot reach a Ray cluster at {address}: {exc.strerror or exc}; start one "
            "with `ray start --head`, or leave out --ray-address to start a local one"
        ) from exc


@contextmanager
def connected(address: str | None, cpus: int) -> Iterator[ModuleType]:
    """Ray, connected for the sweep: to `address`, or to a local instance started and stopped here.

    A process that is already connected (`ray.init` called by the caller) keeps
    its connection, and it is left open.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    try:
        if address is None:
            # A new instance even where `ray start` left one running, on
            # loopback: a sweep's own Ray serves nobody else.
            ray.init(
                address="local",
                num_cpus=cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                **quiet,
            )
        else:
            _check_reachable(address)
            ray.init(address=address, **quiet)
    except UsageError:
        raise
    except Exception as exc:
        where = f"at {address}" if address else "locally"
        raise UsageError(f"cannot start Ray {where}: {type(exc).__name__}: {exc}") from exc
    try:
        yield ray
    finally:
        ray.shutdown()


def _serialized(ray: ModuleType, what: str, value: object) -> None:
    try:
        ray.cloudpickle.dumps(value)
    except Exception as exc:
        raise UsageError(
            f"{what} cannot be sent to Ray workers ({type(exc).__name__}: {exc}); "
            "give the model as a spec such as openai:MODEL or local:FILE.gguf"
        ) from exc


# --- the driver ---------------------------------------------------------------------


@dataclass(slots=True)
class _Job:
    task: Task
    convention: str
    #: Runs of this entry whose worker died, counted only when it ran alone.
    tries: int = 0
    #: Back from a batch whose worker died: runs in a task of its own.
    alone: bool = False

    @property
    def key(self) -> _Key:
        return (self.task.suite, self.task.id)


def _cluster_cpus(ray: ModuleType) -> tuple[float, float]:
    """The CPUs of the largest live node, and of the whole cluster."""
    nodes = [n.get("Resources", {}).get("CPU", 0.0) for n in ray.nodes() if n.get("Alive")]
    return max(nodes, default=0.0), sum(nodes)


class _Notices:
    """Says, at most every so often, why no row has come back for a while."""

    def __init__(self, ray: ModuleType, on_wait: Callable[[str], None] | None, cpus: float):
        self.ray = ray
        self.on_wait = on_wait
        self.cpus = cpus
        self.last_row = time.monotonic()
        self.last_notice = 0.0
        self.rows = 0

    def row(self) -> None:
        self.last_row = time.monotonic()
        self.rows += 1

    def idle(self, queued: int) -> None:
        now = time.monotonic()
        if self.on_wait is None or now - self.last_row < NOTICE_AFTER_S:
            return
        if now - self.last_notice < NOTICE_EVERY_S:
            return
        free = self.ray.available_resources().get("CPU", 0.0)
        if free >= self.cpus:
            return
        total = self.ray.cluster_resources().get("CPU", 0.0)
        self.last_notice = now
        # Before the first row, the CPUs in use may be this sweep's own workers starting.
        starting = "" if self.rows else " (or for this sweep's workers to start)"
        self.on_wait(
            f"waiting for a free CPU on the Ray cluster{starting}: {free:g} of {total:g} "
            f"CPUs free, each entry needs {self.cpus:g}; {queued} entries not finished"
        )


def ray_rows(
    config: BenchConfig,
    jobs: Sequence[tuple[Task, str]],
    tasks: Sequence[Task] | None,
    on_wait: Callable[[str], None] | None = None,
    on_slots: Callable[[list[float]], None] | None = None,
) -> Iterator[Row]:
    """Run `jobs` on Ray and yield each row as it finishes.

    `tasks` are the caller's task objects (shipped to the workers once), or
    None when each worker builds the configured suite itself. With a rate
    limit, `on_slots` gets the shared bucket's `TokenBucket.slots` once every
    row is in.
    """
    ray = import_ray()
    if not isinstance(config.model, str):
        _serialized(ray, f"the model {config.model.name!r}", config.model)
    if tasks is not None:
        _serialized(ray, "the tasks", list(tasks))
    cpus = config.ray.cpus
    with connected(config.ray.address, config.workers or os.cpu_count() or 1) as ray:
        largest, total = _cluster_cpus(ray)
        if largest < cpus:
            raise UsageError(
                f"no node of the Ray cluster has {cpus:g} CPUs for an entry "
                f"(the largest has {largest:g}); lower --ray-cpus"
            )
        workers = config.workers or max(1, int(total // cpus))
        bucket = None
        if config.ray.rate_limit is not None and provider(config.model) is not None:
            bucket = (
                ray.remote(num_cpus=0)(TokenBucket)
                .options(name=f"tooluse-rate-{uuid.uuid4().hex[:8]}")
                .remote(config.ray.rate_limit, config.ray.rate_burst)
            )
        sweep = _Sweep(
            id=uuid.uuid4().hex,
            config=config,
            tasks=ray.put(list(tasks)) if tasks is not None else None,
            bucket=bucket,
        )
        queue = [_Job(task, convention) for task, convention in jobs]
        notices = _Notices(ray, on_wait, cpus)
        actors = config.ray.actors if config.ray.actors is not None else needs_warm_up(config.model)
        run = _on_actors if actors else _on_tasks
        yield from run(ray, sweep, queue, workers, notices)
        if bucket is not None and on_slots is not None:
            on_slots(ray.get(bucket.slots.remote()))


def _worker_row(job: _Job, label: str, exc: BaseException, died: bool) -> Row:
    row = base_row(job.task, job.convention, label)
    cause = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    if died:
        row.error = f"worker: the worker died running this entry, {job.tries} times ({cause})"
    else:
        row.error = f"worker: {cause}"
    return row


def _died(ray: ModuleType, exc: BaseException) -> bool:
    lost = (
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.ActorDiedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.ObjectLostError,
    )
    return isinstance(exc, lost)


def _batch(queue: list[_Job], size: int) -> list[_Job]:
    """The next batch off the queue (a stack): up to `size` fresh jobs, or one being retried."""
    batch = [queue.pop()]
    while queue and len(batch) < size and not batch[0].alone and not queue[-1].alone:
        batch.append(queue.pop())
    return batch


def _on_tasks(
    ray: ModuleType, sweep: _Sweep, queue: list[_Job], workers: int, notices: _Notices
) -> Iterator[Row]:
    # A task runs a batch of entries, sized from the rows seen so far so that a
    # task lasts about BATCH_S: one entry per task for a hosted model, dozens for
    # the oracle, whose entries take a millisecond against Ray's few per task.
    # When a worker dies, the entries of its batch go back alone, uncounted (which
    # one killed it is unknown); an entry whose worker dies while it runs alone
    # gets one more try, so only the entry that kills its worker becomes an
    # error row.
    remote = ray.remote(num_cpus=sweep.config.ray.cpus, max_retries=0)(_run_batch)
    sweep_ref = ray.put(sweep)
    running: dict[Any, list[_Job]] = {}
    queue.reverse()
    size, seen, spent = 1, 0, 0.0
    while queue or running:
        while queue and len(running) < workers:
            share = -(-len(queue) // workers)  # no batch holds back the sweep's tail
            batch = _batch(queue, min(size, share))
            keys = [(job.key, job.convention) for job in batch]
            running[remote.remote(sweep_ref, keys)] = batch
        ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
        if not ready:
            notices.idle(len(queue) + sum(map(len, running.values())))
            continue
        for ref in ready:
            batch = running.pop(ref)
            try:
                rows: list[Row] = ray.get(ref)
            except ray.exceptions.RayError as exc:
                died = _died(ray, exc)
                rows = []
                for job in batch:
                    if died and len(batch) > 1:
                        job.alone = True
                        queue.append(job)
                        continue
                    job.tries += 1
                    if died and job.tries < TRIES:
                        queue.append(job)
                    else:
                        rows.append(_worker_row(job, sweep.config.label, exc, died))
            for row in rows:
                seen += 1
                spent += row.wall_s
                notices.row()
                yield row
            if seen:
                size = max(1, min(MAX_BATCH, int(BATCH_S / max(spent / seen, 1e-6))))


def _on_actors(
    ray: ModuleType, sweep: _Sweep, queue: list[_Job], workers: int, notices: _Notices
) -> Iterator[Row]:
    # An actor that dies is replaced by a fresh one, and its entry is tried there
    # once more; the model loads once per actor, not once per entry.
    actor_class = ray.remote(num_cpus=sweep.config.ray.cpus, max_restarts=0)(_EntryWorker)
    sweep_ref = ray.put(sweep)
    idle = [actor_class.remote(sweep_ref) for _ in range(min(workers, len(queue)))]
    running: dict[Any, tuple[_Job, Any]] = {}
    queue.reverse()
    try:
        while queue or running:
            while queue and idle:
                job = queue.pop()
                job.tries += 1
                actor = idle.pop()
                running[actor.run.remote(job.key, job.convention)] = (job, actor)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            if not ready:
                notices.idle(len(queue) + len(running))
                continue
            for ref in ready:
                job, actor = running.pop(ref)
                try:
                    row: Row = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    died = _died(ray, exc)
                    if died:
                        ray.kill(actor)
                        actor = actor_class.remote(sweep_ref)
                        if job.tries < TRIES:
                            queue.append(job)
                            idle.append(actor)
                            continue
                    row = _worker_row(job, sweep.config.label, exc, died)
                idle.append(actor)
                notices.row()
                yield row
    finally:
        for actor in idle + [a for _, a in running.values()]:
            ray.kill(actor)
