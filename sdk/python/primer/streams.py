"""Streams: exec output (NDJSON), workspace and tenant events, a run's
progress and an agent run's transcript (SSE). Each stream is iterated with
``for`` on a :class:`primer.Client` and ``async for`` on a
:class:`primer.AsyncClient`; event streams resume after the last event seen
when the connection drops (``Last-Event-ID``)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterator, List, Optional

from . import errors
from ._core import Req, SSEParser
from ._decode import decode
from .types import Event, ExecChunk, ExecResult, SessionRun, TranscriptEntry

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase

#: A dropped event stream is opened again after the last event seen; this
#: many attempts in a row that deliver nothing end it.
FOLLOW_ATTEMPTS = 5


class _Stream:
    """Base of the streams: which client reads them, and closing early."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client
        self._closed = False

    def close(self) -> None:
        """Stops the stream; the iteration ends at its next step."""
        self._closed = True

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class ExecStream(_Stream):
    """A running command's output, chunk by chunk (:class:`ExecChunk`), as
    the server flushes it. After the iteration ends, :attr:`result` holds
    the exit and the whole output. Leaving the iteration early (``break``,
    an exception) cancels the command."""

    def __init__(self, client: "_ClientBase", ws_id: str, body: Dict[str, Any], on_stdout: Optional[Callable[[str], Any]] = None,
                 on_stderr: Optional[Callable[[str], Any]] = None) -> None:
        super().__init__(client)
        self.ws_id = ws_id
        self._body = dict(body, stream=True)
        self._out: List[str] = []
        self._err: List[str] = []
        self._on = {"stdout": on_stdout, "stderr": on_stderr}
        #: The command's result, set when its exit arrived.
        self.result: Optional[ExecResult] = None

    def _req(self) -> Req:
        return Req("POST", f"/v1/workspaces/{self.ws_id}/exec", json=self._body, timeout=None,
                   headers={"Accept": "application/x-ndjson"}, idempotent=False)

    def _line(self, line: str) -> Optional[ExecChunk]:
        if not line.strip():
            return None
        try:
            m = json.loads(line)
        except ValueError as e:
            raise errors.Internal(f"workspace {self.ws_id}: exec: bad stream line {line[:80]!r}") from e
        if "exit" in m and isinstance(m["exit"], dict):
            r = decode(ExecResult, m["exit"])
            r.stdout, r.stderr = "".join(self._out), "".join(self._err)
            self.result = r
            return None
        env = errors.from_envelope(m, 200)
        if env is not None:
            raise env
        s = m.get("stream")
        if s not in ("stdout", "stderr"):
            return None  # a line of a newer server's kind
        data = m.get("data") or ""
        (self._out if s == "stdout" else self._err).append(data)
        cb = self._on[s]
        if cb is not None:
            cb(data)
        return ExecChunk(s, data)

    def _ended(self) -> None:
        if self.result is None:
            raise errors.Unavailable(f"workspace {self.ws_id}: exec: stream ended before the exit status")

    def __iter__(self) -> Iterator[ExecChunk]:
        with self._client._core.stream(self._req()) as resp:
            for line in resp.iter_lines():
                c = self._line(line)
                if self.result is not None:
                    return
                if c is not None:
                    yield c
                if self._closed:
                    return
        self._ended()

    async def __aiter__(self) -> AsyncIterator[ExecChunk]:
        async with self._client._core.stream(self._req()) as resp:
            async for line in resp.aiter_lines():
                c = self._line(line)
                if self.result is not None:
                    return
                if c is not None:
                    yield c
                if self._closed:
                    return
        self._ended()

    def wait(self) -> ExecResult:
        """Reads the stream to its end and returns the result (sync)."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result

    async def await_result(self) -> ExecResult:
        """Reads the stream to its end and returns the result (async)."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result


class _SSEStream(_Stream):
    """An SSE stream that is opened again after the last id it saw when
    the connection drops, until :meth:`_finished` says it is over."""

    def __init__(self, client: "_ClientBase", path: str, last_id: int = 0, params: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(client)
        self._path = path
        self._params = params or {}
        #: The id of the last event delivered; a new stream resumes after it.
        self.last_id = last_id
        self._done = False

    def _req(self) -> Req:
        headers = {"Accept": "text/event-stream"}
        if self.last_id:
            headers["Last-Event-ID"] = str(self.last_id)
        return Req("GET", self._path, params=dict(self._params, follow="true"), headers=headers, timeout=None)

    def _message(self, id: str, event: str, data: str) -> Any:
        """Turns one message into what the iteration yields (None: nothing)."""
        raise NotImplementedError

    def _after_drop(self) -> Optional[Req]:
        """A call to make when the server ended the stream cleanly: its
        answer (or NotFound) tells whether the stream is over."""
        return None

    def _gone(self, answer: Any) -> bool:
        return False

    def _pause(self, failures: int) -> float:
        return min(0.25 * (2 ** (failures - 1)), 5.0) * (0.5 + random.random() / 2)

    def __iter__(self) -> Iterator[Any]:
        failures = 0
        while not self._done and not self._closed:
            delivered, err = False, None
            try:
                with self._client._core.stream(self._req()) as resp:
                    p = SSEParser()
                    for line in resp.iter_lines():
                        m = p.feed(line)
                        if m is None:
                            continue
                        out = self._message(*m)
                        if out is not None:
                            delivered = True
                            yield out
                        if self._done or self._closed:
                            return
            except (errors.Unavailable, errors.Timeout) as e:
                err = e
            if err is None and (q := self._after_drop()) is not None:
                try:
                    if self._gone(self._client._core.call(q)):
                        return
                except errors.NotFound:
                    return
            failures = 0 if delivered else failures + 1
            if failures >= FOLLOW_ATTEMPTS:
                raise err or errors.Unavailable(f"{self._path}: stream keeps ending before it is over")
            time.sleep(self._pause(max(failures, 1)))

    async def __aiter__(self) -> AsyncIterator[Any]:
        failures = 0
        while not self._done and not self._closed:
            delivered, err = False, None
            try:
                async with self._client._core.stream(self._req()) as resp:
                    p = SSEParser()
                    async for line in resp.aiter_lines():
                        m = p.feed(line)
                        if m is None:
                            continue
                        out = self._message(*m)
                        if out is not None:
                            delivered = True
                            yield out
                        if self._done or self._closed:
                            return
            except (errors.Unavailable, errors.Timeout) as e:
                err = e
            if err is None and (q := self._after_drop()) is not None:
                try:
                    if self._gone(await self._client._core.call(q)):
                        return
                except errors.NotFound:
                    return
            failures = 0 if delivered else failures + 1
            if failures >= FOLLOW_ATTEMPTS:
                raise err or errors.Unavailable(f"{self._path}: stream keeps ending before it is over")
            await asyncio.sleep(self._pause(max(failures, 1)))


def _error_event(path: str, data: str) -> errors.PrimerError:
    try:
        e = errors.from_envelope(json.loads(data), 200)
    except ValueError:
        e = None
    return e or errors.Internal(f"{path}: bad error event {data[:80]!r}")


class EventStream(_SSEStream):
    """Events as they are written (:class:`Event`), stored ones first. A
    workspace's stream ends after ``workspace.destroyed`` (or when the
    workspace is gone); a tenant's never ends on its own. ``last_id`` is
    where a new stream would resume."""

    def __init__(self, client: "_ClientBase", path: str, last_id: int = 0, ws_id: Optional[str] = None,
                 params: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(client, path, last_id, params)
        self._ws = ws_id

    def _message(self, id: str, event: str, data: str) -> Optional[Event]:
        if not data:
            return None
        if event == "error":
            raise _error_event(self._path, data)
        try:
            ev = decode(Event, json.loads(data))
        except ValueError as e:
            raise errors.Internal(f"{self._path}: bad event {data[:80]!r}") from e
        if not ev.id and id.isdigit():
            ev.id = int(id)
        ev.type = ev.type or event
        if ev.id and ev.id <= self.last_id:
            return None  # a replay overlap after reconnecting
        self.last_id = max(self.last_id, ev.id)
        if self._ws and ev.type == "workspace.destroyed":
            self._done = True
        return ev

    def _after_drop(self) -> Optional[Req]:
        return Req("GET", f"/v1/workspaces/{self._ws}") if self._ws else None


class TranscriptStream(_SSEStream):
    """An agent run's transcript, entry by entry (:class:`TranscriptEntry`)
    as each becomes final, until the run ends; then :attr:`run` holds the
    ended run."""

    def __init__(self, client: "_ClientBase", session_id: str) -> None:
        super().__init__(client, f"/v1/sessions/{session_id}/transcript")
        self.session_id = session_id
        #: The run, once it has ended.
        self.run: Optional[SessionRun] = None
        self.entries: List[TranscriptEntry] = []

    def _message(self, id: str, event: str, data: str) -> Optional[TranscriptEntry]:
        if not data:
            return None
        if event == "end":
            self.run = decode(SessionRun, json.loads(data))
            self._done = True
            return None
        if event == "error":
            raise _error_event(self._path, data)
        e = decode(TranscriptEntry, json.loads(data))
        if e.seq and e.seq <= self.last_id:
            return None
        self.last_id = max(self.last_id, e.seq)
        self.entries.append(e)
        return e

    def wait(self) -> SessionRun:
        """Reads the transcript to the run's end and returns the run (sync)."""
        for _ in self:
            pass
        if self.run is None:
            raise errors.Unavailable(f"session {self.session_id}: transcript ended before the run")
        return self.run

    async def await_run(self) -> SessionRun:
        """Reads the transcript to the run's end and returns the run (async)."""
        async for _ in self:
            pass
        if self.run is None:
            raise errors.Unavailable(f"session {self.session_id}: transcript ended before the run")
        return self.run
