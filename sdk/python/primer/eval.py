"""Eval suites defined in Python: :class:`Case`, :class:`Expect`,
:class:`Schedule`; ``client.suites.create(...)`` stores them and
``suite.run(wait=True)`` runs them, with results as objects, JUnit XML and
comparisons between runs."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from . import errors
from ._core import Op, Req, Sleep, one
from ._decode import decode
from ._util import Duration, compact, dur, items, seg
from .streams import _error_event, _SSEStream
from .types import CaseResult, Comparison, Progress, ScheduleStatus
from .workspace import _binder, _Bound

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase

#: A file's content in a case: text, or bytes (sent as base64).
FileContent = Union[str, bytes]


def _files(files: Optional[Mapping[str, FileContent]]) -> Optional[Dict[str, Any]]:
    if not files:
        return None
    return {p: ({"base64": base64.b64encode(c).decode()} if isinstance(c, bytes) else c) for p, c in files.items()}


@dataclass
class Expect:
    """What a case's outcome must meet to pass."""

    exit_code: Optional[int] = 0
    stdout_contains: Sequence[str] = ()
    stdout_matches: Optional[str] = None
    files: Optional[Mapping[str, FileContent]] = None

    def to_json(self) -> Dict[str, Any]:
        return compact({"exit_code": self.exit_code, "stdout_contains": list(self.stdout_contains) or None,
                        "stdout_matches": self.stdout_matches, "files": _files(self.files)})


@dataclass
class Case:
    """One case: files to write, setup commands, the command (a list of
    arguments, or a string run with ``sh -c``) and what to expect."""

    id: str
    command: Union[str, Sequence[str]]
    files: Optional[Mapping[str, FileContent]] = None
    setup: Sequence[str] = ()
    env: Optional[Mapping[str, str]] = None
    timeout: Optional[Duration] = None
    expect: Optional[Expect] = None
    score_file: Optional[str] = None
    collect: Sequence[str] = ()
    labels: Optional[Mapping[str, str]] = None

    def to_json(self) -> Dict[str, Any]:
        return compact({"id": self.id, "command": self.command if isinstance(self.command, str) else list(self.command),
                        "files": _files(self.files), "setup": list(self.setup) or None,
                        "env": dict(self.env) if self.env else None, "timeout": dur(self.timeout),
                        "expect": self.expect.to_json() if self.expect else None, "score_file": self.score_file,
                        "collect": list(self.collect) or None, "labels": dict(self.labels) if self.labels else None})


@dataclass
class Defaults:
    """What every case of a suite gets unless it says otherwise."""

    timeout: Optional[Duration] = None
    env: Optional[Mapping[str, str]] = None
    files: Optional[Mapping[str, FileContent]] = None
    setup: Sequence[str] = ()

    def to_json(self) -> Dict[str, Any]:
        return compact({"timeout": dur(self.timeout), "env": dict(self.env) if self.env else None,
                        "files": _files(self.files), "setup": list(self.setup) or None})


@dataclass
class Schedule:
    """When a suite runs by itself: a ``cron`` expression or an
    ``interval``, read in ``time_zone``; ``overlap`` says what to do when a
    run is due while the last still runs (skip, buffer_one, allow_all)."""

    cron: Optional[str] = None
    interval: Optional[Duration] = None
    time_zone: Optional[str] = None
    overlap: Optional[str] = None
    paused: bool = False

    def to_json(self) -> Dict[str, Any]:
        return compact({"cron": self.cron, "interval": dur(self.interval), "time_zone": self.time_zone,
                        "overlap": self.overlap, "paused": self.paused or None})


def suite_document(id: str, cases: Sequence[Union[Case, Mapping[str, Any]]], *, template_id: Optional[str] = None,
                   pool_id: Optional[str] = None, description: Optional[str] = None, concurrency: int = 0,
                   retries: Optional[int] = None, defaults: Optional[Defaults] = None, schedule: Optional[Schedule] = None,
                   webhook_url: Optional[str] = None) -> Dict[str, Any]:
    """The JSON document of a suite, as ``POST /v1/suites`` reads it."""
    return compact({"id": id, "description": description, "template_id": template_id, "pool_id": pool_id,
                    "concurrency": concurrency or None, "retries": retries,
                    "defaults": defaults.to_json() if defaults else None,
                    "schedule": schedule.to_json() if schedule else None, "webhook_url": webhook_url,
                    "cases": [c.to_json() if isinstance(c, Case) else dict(c) for c in cases]})


@dataclass
class Run(_Bound):
    """A run of a suite: one Temporal workflow whose id is the run's id."""

    id: str = ""
    suite_id: str = ""
    status: str = ""
    reason: str = ""
    trigger: str = ""
    triggered_by: str = ""
    selection: Optional[Dict[str, Any]] = None
    total: int = 0
    workflow_id: str = ""
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None
    progress: Progress = field(default_factory=Progress)

    @property
    def final(self) -> bool:
        """True once the run has ended (succeeded, canceled or failed)."""
        return self.status in ("succeeded", "canceled", "failed")

    @property
    def passed(self) -> bool:
        """True when the run succeeded and every case passed."""
        return self.status == "succeeded" and self.progress.passed == self.progress.total

    def refresh(self) -> "Run":
        """Reads the run again, with its progress."""
        return self._client.runs.get(self.id)

    def wait(self, on_progress: Optional[Callable[[Progress], Any]] = None, timeout: Optional[float] = None) -> "Run":
        """Follows the run's progress (``on_progress`` sees it at once and at
        every change) and returns the run once it has ended."""
        s = _RunStream(self._client, seg(self.id), on_progress)
        if self._client._async:
            return _await_run(s, timeout)  # type: ignore[return-value]
        deadline = time.monotonic() + timeout if timeout else None
        for _ in s:
            if deadline is not None and time.monotonic() >= deadline:
                raise errors.Timeout(f"run {self.id}: still running after {timeout}s")
        assert s.run is not None
        return s.run

    def results(self) -> List[CaseResult]:
        """The case results in case order."""
        return self._client._run(one(Req("GET", f"/v1/runs/{seg(self.id)}/results", timeout=None), items(CaseResult)))

    def junit(self) -> str:
        """The results as JUnit XML."""
        return self._client._run(one(Req("GET", f"/v1/runs/{seg(self.id)}/results", params={"format": "junit"},
                                         headers={"Accept": "application/xml"}, timeout=None, raw=True), lambda r: r.text))

    def compare(self, base: Union[str, "Run"]) -> Comparison:
        """How this run differs from ``base``, by case."""
        b = getattr(base, "id", base)
        return self._client._run(one(Req("GET", f"/v1/runs/{seg(self.id)}/compare", params={"base": b}),
                                     lambda d: decode(Comparison, d)))

    def cancel(self) -> "Run":
        """Asks the run to stop; it ends canceled."""
        return self._client._run(one(Req("POST", f"/v1/runs/{seg(self.id)}/cancel", idempotent=False), _binder(Run, self._client)))


async def _await_run(s: "_RunStream", timeout: Optional[float]) -> Run:
    import asyncio

    async def read() -> None:
        async for _ in s:
            pass

    await asyncio.wait_for(read(), timeout)
    assert s.run is not None
    return s.run


class _RunStream(_SSEStream):
    """A run's progress events, then its end."""

    def __init__(self, client: "_ClientBase", run_id: str, on_progress: Optional[Callable[[Progress], Any]]) -> None:
        super().__init__(client, f"/v1/runs/{run_id}/events")
        self._on = on_progress
        self.run: Optional[Run] = None

    def _message(self, id: str, event: str, data: str) -> Any:
        if not data:
            return None
        if event == "error":
            raise _error_event(self._path, data)
        if event == "progress":
            p = decode(Progress, json.loads(data))
            if self._on is not None:
                self._on(p)
            return p
        if event == "finished":
            self.run = decode(Run, json.loads(data))._bind(self._client)
            self._done = True
        return None


@dataclass
class Suite(_Bound):
    """An eval suite: where its cases run, how many at once, its defaults,
    its schedule and how many cases it has."""

    id: str = ""
    description: str = ""
    template_id: str = ""
    pool_id: str = ""
    spec: Dict[str, Any] = field(default_factory=dict)
    case_count: int = 0
    schedule_status: Optional[ScheduleStatus] = None
    schedule_error: str = ""
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None

    def _p(self, rest: str = "") -> str:
        return f"/v1/suites/{seg(self.id)}{rest}"

    def run(self, *, cases: Optional[Sequence[str]] = None, labels: Optional[Mapping[str, str]] = None,
            triggered_by: Optional[str] = None, wait: bool = False, on_progress: Optional[Callable[[Progress], Any]] = None,
            timeout: Optional[float] = None) -> Run:
        """Starts a run of the suite (every case, or those ``cases`` and
        ``labels`` pick); with ``wait``, returns it once it has ended."""
        body = compact({"cases": list(cases) if cases else None, "labels": dict(labels) if labels else None,
                        "triggered_by": triggered_by}) or None
        c = self._client
        op = one(Req("POST", self._p("/runs"), json=body, idempotent=False), _binder(Run, c))
        if not wait:
            return c._run(op)
        if c._async:
            async def go() -> Run:
                r = await c._run(op)
                return await r.wait(on_progress, timeout)
            return go()  # type: ignore[return-value]
        return c._run(op).wait(on_progress, timeout)

    def cases(self) -> List[Dict[str, Any]]:
        """The suite's cases as documents, in order."""
        def parse(d: Any) -> List[Dict[str, Any]]:
            return list((d or {}).get("items") or [])
        return self._client._run(one(Req("GET", self._p("/cases")), parse))

    def runs(self, status: Optional[str] = None, limit: Optional[int] = None) -> List[Run]:
        """The suite's runs, newest first."""
        return self._client.runs.list(suite_id=self.id, status=status, limit=limit)

    def pause(self) -> "Suite":
        """Pauses the suite's schedule."""
        return self._client._run(one(Req("POST", self._p("/schedule/pause"), idempotent=False), _binder(Suite, self._client)))

    def resume(self) -> "Suite":
        """Resumes the suite's schedule."""
        return self._client._run(one(Req("POST", self._p("/schedule/resume"), idempotent=False), _binder(Suite, self._client)))

    def trigger(self) -> "Suite":
        """Makes the suite's schedule start a run now."""
        return self._client._run(one(Req("POST", self._p("/schedule/trigger"), idempotent=False), _binder(Suite, self._client)))

    def refresh(self) -> "Suite":
        """Reads the suite again, with its schedule's state."""
        return self._client.suites.get(self.id)

    def delete(self) -> None:
        """Deletes the suite and its schedule; its runs stay."""
        return self._client.suites.delete(self.id)


class Suites:
    """``client.suites``: eval suites."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def create(self, id: str, cases: Sequence[Union[Case, Mapping[str, Any]]], **kw: Any) -> Suite:
        """Creates a suite from cases defined in Python (see
        :func:`suite_document` for the keyword arguments: ``template_id`` or
        ``pool_id``, ``concurrency``, ``retries``, ``defaults``,
        ``schedule``, ``description``, ``webhook_url``)."""
        doc = suite_document(id, cases, **kw)
        return self._client._run(one(Req("POST", "/v1/suites", json=doc, timeout=None, idempotent=False), _binder(Suite, self._client)))

    def create_jsonl(self, id: str, cases: Iterable[Union[Case, Mapping[str, Any]]], *, update: bool = False, **kw: Any) -> Suite:
        """Creates (or with ``update`` replaces) a suite as JSONL, the
        document on the first line and then one case a line, streamed as
        ``cases`` yields them: the way for suites of thousands of cases."""
        spec = suite_document(id, [], **kw)
        spec.pop("cases", None)

        def lines() -> Iterator[bytes]:
            yield json.dumps(spec).encode() + b"\n"
            for c in cases:
                yield json.dumps(c.to_json() if isinstance(c, Case) else dict(c)).encode() + b"\n"

        content: Any = lines()
        if self._client._async:
            async def alines() -> AsyncIterator[bytes]:
                for b in lines():
                    yield b
            content = alines()
        req = Req("PUT" if update else "POST", f"/v1/suites/{seg(id)}" if update else "/v1/suites", content=content,
                  headers={"Content-Type": "application/x-ndjson"}, timeout=None, idempotent=False)
        return self._client._run(one(req, _binder(Suite, self._client)))

    def update(self, id: str, cases: Sequence[Union[Case, Mapping[str, Any]]], **kw: Any) -> Suite:
        """Replaces the suite's document and cases; its schedule follows."""
        doc = suite_document(id, cases, **kw)
        return self._client._run(one(Req("PUT", f"/v1/suites/{seg(id)}", json=doc, timeout=None), _binder(Suite, self._client)))

    def apply(self, id: str, cases: Sequence[Union[Case, Mapping[str, Any]]], **kw: Any) -> Suite:
        """Creates the suite, or replaces it when it exists."""
        doc = suite_document(id, cases, **kw)
        c = self._client

        def op() -> Op:
            try:
                d = yield Req("PUT", f"/v1/suites/{seg(id)}", json=doc, timeout=None)
            except errors.NotFound:
                d = yield Req("POST", "/v1/suites", json=doc, timeout=None, idempotent=False)
            return decode(Suite, d)._bind(c)

        return c._run(op())

    def get(self, id: str) -> Suite:
        """The suite ``id`` with its schedule's state."""
        return self._client._run(one(Req("GET", f"/v1/suites/{seg(id)}"), _binder(Suite, self._client)))

    def list(self) -> List[Suite]:
        """Every suite, by id."""
        return self._client._run(one(Req("GET", "/v1/suites"), items(Suite, lambda s: s._bind(self._client))))

    def delete(self, id: str) -> None:
        """Deletes the suite ``id`` and its schedule."""
        return self._client._run(one(Req("DELETE", f"/v1/suites/{seg(id)}"), lambda d: None))


class Runs:
    """``client.runs``: runs of every suite."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def get(self, id: str) -> Run:
        """The run ``id`` with its progress."""
        return self._client._run(one(Req("GET", f"/v1/runs/{seg(id)}"), _binder(Run, self._client)))

    def list(self, suite_id: Optional[str] = None, status: Optional[str] = None, limit: Optional[int] = None) -> List[Run]:
        """The runs the filters select, newest first (without progress)."""
        return self._client._run(one(Req("GET", "/v1/runs", params={"suite_id": suite_id, "status": status, "limit": limit}),
                                     items(Run, lambda r: r._bind(self._client))))

    def wait_for(self, suite_id: str, count: int = 1, timeout: Optional[float] = 300,
                 since: Optional[datetime] = None) -> List[Run]:
        """Waits until the suite has ``count`` ended runs (a schedule's)
        made at or after ``since`` (the runs of a deleted suite of the same
        id stay) and returns them, newest first."""
        c = self._client

        def op() -> Op:
            deadline = time.monotonic() + timeout if timeout else None
            while True:
                rs = items(Run, lambda r: r._bind(c))((yield Req("GET", "/v1/runs", params={"suite_id": suite_id})))
                done = [r for r in rs if r.final and (since is None or (r.created_at is not None and r.created_at >= since))]
                if len(done) >= count:
                    return done
                if deadline is not None and time.monotonic() >= deadline:
                    raise errors.Timeout(f"suite {suite_id}: {len(done)} of {count} runs ended after {timeout}s")
                yield Sleep(0.5)

        return c._run(op())
