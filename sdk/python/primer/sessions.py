"""Sessions: an agent's calls recorded as commits (tools, history, diff,
restore) and agent runs with their streamed transcript."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from . import errors
from ._core import Op, Req, one
from ._decode import decode
from ._util import Duration, compact, dur, items, seg
from .streams import TranscriptStream
from .types import Diff, History, Restore, SessionRun, ToolExecResult, ToolFile, ToolWriteResult, Transcript
from .workspace import _binder, _Bound

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase


@dataclass
class Session(_Bound):
    """One agent's work on a workspace. Its tool calls are recorded as
    commits of the workspace's ``.state`` history. As a context manager it
    is ended on exit."""

    id: str = ""
    workspace_id: str = ""
    agent: str = ""
    metadata: Dict[str, str] = field(default_factory=dict)
    status: str = ""
    resumed_from: str = ""
    end_reason: str = ""
    state_head: str = ""
    history_bytes: int = 0
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    ended_at: Optional[datetime] = None

    def _p(self, rest: str = "") -> str:
        return f"/v1/sessions/{seg(self.id)}{rest}"

    def refresh(self) -> "Session":
        """Reads the session again."""
        return self._client.sessions.get(self.id)

    def call(self, tool: str, args: Optional[Mapping[str, Any]] = None) -> Any:
        """Calls any session tool with ``args`` and returns its JSON answer."""
        return self._client._run(one(Req("POST", self._p(f"/tools/{seg(tool)}"), json=dict(args or {}), timeout=None,
                                         idempotent=False)))

    def exec(self, command: Union[str, Sequence[str]], *, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
             stdin: Optional[str] = None, timeout: Optional[Duration] = None) -> ToolExecResult:
        """Runs a command as the session's ``workspace__exec`` (a string is a
        script for ``sh -c``, a list the arguments) and records it."""
        body = compact({"cwd": cwd, "env": dict(env) if env else None, "stdin": stdin, "timeout": dur(timeout)})
        if isinstance(command, str):
            body["command"] = command
        else:
            body["args"] = [str(a) for a in command]
        return self._client._run(one(Req("POST", self._p("/tools/workspace__exec"), json=body, timeout=None,
                                         idempotent=False), lambda d: decode(ToolExecResult, d)))

    def write(self, path: str, content: Union[str, bytes], mode: Optional[int] = None) -> ToolWriteResult:
        """Writes a file as the session's ``workspace__write`` and records it."""
        body: Dict[str, Any] = {"path": path}
        if isinstance(content, bytes):
            try:
                body["content"] = content.decode("utf-8")
            except UnicodeDecodeError:
                body["content"], body["encoding"] = base64.b64encode(content).decode(), "base64"
        else:
            body["content"] = content
        if mode is not None:
            body["mode"] = f"{mode & 0o7777:04o}"
        return self._client._run(one(Req("POST", self._p("/tools/workspace__write"), json=body, timeout=None,
                                         idempotent=False), lambda d: decode(ToolWriteResult, d)))

    def read(self, path: str) -> ToolFile:
        """Reads a file as the session's ``workspace__read`` and records it."""
        def parse(d: Any) -> ToolFile:
            raw = d.get("content") or ""
            data = base64.b64decode(raw) if d.get("encoding") == "base64" else raw.encode("utf-8")
            return ToolFile(path=d.get("path", path), content=data, size=d.get("size", len(data)), commit=d.get("commit", ""))
        return self._client._run(one(Req("POST", self._p("/tools/workspace__read"), json={"path": path}, timeout=None,
                                         idempotent=False), parse))

    def history(self, include_resumed: bool = False) -> History:
        """The session's recorded calls, newest first."""
        return self._client._run(one(Req("GET", self._p("/history"), params={"include_resumed": "true" if include_resumed else None}),
                                     lambda d: decode(History, d)))

    def diff(self, commit: Optional[str] = None, *, from_: Optional[str] = None, to: Optional[str] = None) -> Diff:
        """What a commit changed (against its parent), or between ``from_`` and ``to``."""
        return self._client._run(one(Req("GET", self._p("/diff"), params={"commit": commit, "from": from_, "to": to}),
                                     lambda d: decode(Diff, d)))

    def restore(self, commit: str) -> Restore:
        """Makes the workspace's files those of ``commit``, recorded as a new commit."""
        return self._client._run(one(Req("POST", self._p("/restore"), json={"commit": commit}, idempotent=False),
                                     lambda d: decode(Restore, d)))

    def end(self, reason: Optional[str] = None) -> "Session":
        """Ends the session (an ended one keeps its first reason)."""
        return self._client._run(one(Req("POST", self._p("/end"), json=compact({"reason": reason})),
                                     _binder(Session, self._client)))

    def run(self, agent: str, instructions: str) -> TranscriptStream:
        """Starts ``agent`` on the session with ``instructions`` and returns
        its transcript as a stream: iterate it to see each entry as it
        becomes final; ``.run`` is the ended run afterwards, ``.wait()``
        reads to the end. (Async: ``stream = await session.run(...)``.)"""
        c = self._client

        def op() -> Op:
            yield Req("POST", self._p("/run"), json={"agent": agent, "instructions": instructions}, idempotent=False)
            return TranscriptStream(c, seg(self.id))

        return c._run(op())

    def follow(self) -> TranscriptStream:
        """The transcript of the session's run as a stream (from the start)."""
        return TranscriptStream(self._client, seg(self.id))

    def transcript(self) -> Transcript:
        """The transcript as it stands."""
        return self._client._run(one(Req("GET", self._p("/transcript")), lambda d: decode(Transcript, d)))

    def cancel(self) -> None:
        """Asks the session's agent run to stop (it ends canceled)."""
        return self._client._run(one(Req("POST", self._p("/cancel"), json={}, idempotent=False), lambda d: None))

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._client._run(_end_quietly(self.id))

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._client._run(_end_quietly(self.id))


def _end_quietly(sid: str) -> Op:
    try:
        yield Req("POST", f"/v1/sessions/{seg(sid)}/end")
    except (errors.NotFound, errors.Conflict):
        pass


class Sessions:
    """``client.sessions``."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def create(self, workspace_id: Any, *, agent: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None,
               instructions: Optional[str] = None) -> Session:
        """Opens a session on a workspace (an id or a Workspace); with
        ``agent`` and ``instructions`` its agent run starts at once."""
        wid = getattr(workspace_id, "id", workspace_id)
        body = compact({"workspace_id": wid, "agent": agent, "metadata": dict(metadata) if metadata else None,
                        "instructions": instructions})
        return self._client._pending(one(Req("POST", "/v1/sessions", json=body, idempotent=False), _binder(Session, self._client)))

    def get(self, id: str) -> Session:
        """The session ``id``."""
        return self._client._run(one(Req("GET", f"/v1/sessions/{seg(id)}"), _binder(Session, self._client)))

    def list(self, workspace_id: Optional[str] = None, status: Optional[str] = None) -> List[Session]:
        """The sessions (of a workspace, in a status), newest first."""
        return self._client._run(one(Req("GET", "/v1/sessions", params={"workspace_id": workspace_id, "status": status}),
                                     items(Session, lambda s: s._bind(self._client))))
