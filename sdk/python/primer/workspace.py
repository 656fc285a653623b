"""Workspaces: the handle (exec, files, processes, events, lifetimes,
sessions) and ``client.workspaces``."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import (TYPE_CHECKING, Any, AsyncIterator, BinaryIO, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Union)

from . import errors
from ._core import Op, Req, Sleep, one
from ._decode import decode
from ._util import Command, Duration, argv, compact, dur, file_path, items, rfc3339, seg
from .streams import EventStream, ExecStream
from .types import Event, ExecResult, FileInfo, ListeningPort, Preview, ProcessExit, TerminalSize

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase
    from .sessions import Session
    from .snapshots import Forked, Snapshot

#: Chunk size of file transfers: the server streams 512 KiB at a time.
CHUNK = 512 << 10


class _Bound:
    """A handle: a record that keeps the client that fetched it."""

    _client: Any  # the client ("_ClientBase"); not a field

    def _bind(self, client: "_ClientBase") -> Any:
        object.__setattr__(self, "_client", client)
        return self


def _binder(cls: Any, client: "_ClientBase") -> Callable[[Any], Any]:
    return lambda d: decode(cls, d)._bind(client)


class _Pending:
    """An async client's answer that is awaited (``await``) or used as a
    context manager at once (``async with client.workspaces.create(...)``)."""

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self._value: Any = None

    def __await__(self) -> Any:
        return self._coro.__await__()

    async def __aenter__(self) -> Any:
        self._value = await self._coro
        return await self._value.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._value.__aexit__(*exc)


def wait_phase(client: "_ClientBase", ws_id: str, phase: str, timeout: Optional[float]) -> Op:
    """Polls the workspace until it is in ``phase``. Waiting for running
    fails when it ends failed or escalated or starts terminating; a poll
    after the first that finds the server unavailable is retried."""
    deadline = time.monotonic() + timeout if timeout else None
    last: Optional[Workspace] = None
    pause = 0.05
    while True:
        try:
            d = yield Req("GET", f"/v1/workspaces/{seg(ws_id)}")
            w = decode(Workspace, d)._bind(client)
            last = w
            if w.phase == phase:
                return w
            if phase == "running" and w.phase in ("failed", "escalated", "terminating"):
                why = f": {w.reason}" if w.reason else ""
                raise errors.WorkspaceFailed(f"workspace {ws_id}: {w.phase}{why}", status=409,
                                             details={"phase": w.phase, "reason": w.reason})
        except (errors.Unavailable, errors.Timeout):
            if last is None:
                raise
        if deadline is not None and time.monotonic() >= deadline:
            raise errors.Timeout(f"workspace {ws_id}: wait for {phase}: still {last.phase if last else 'unknown'} after {timeout}s")
        yield Sleep(pause)
        pause = min(pause * 1.5, 0.5)


def wait_gone(ws_id: str, timeout: Optional[float]) -> Op:
    """Polls until the workspace no longer exists (GET is 404)."""
    deadline = time.monotonic() + timeout if timeout else None
    pause = 0.05
    phase = "unknown"
    while True:
        try:
            d = yield Req("GET", f"/v1/workspaces/{seg(ws_id)}")
            phase = (d or {}).get("phase", phase)
        except errors.NotFound:
            return None
        except (errors.Unavailable, errors.Timeout):
            pass
        if deadline is not None and time.monotonic() >= deadline:
            raise errors.Timeout(f"workspace {ws_id}: wait until gone: still {phase} after {timeout}s")
        yield Sleep(pause)
        pause = min(pause * 1.5, 0.5)


@dataclass
class Workspace(_Bound):
    """A live sandbox. Use it as a context manager to clean up on exit:
    ``with client.workspaces.create("default") as ws:`` deletes it when the
    block ends (a workspace leased from a pool goes back to its pool
    instead), whether the block returned or raised."""

    id: str = ""
    template_id: str = ""
    provider_id: str = ""
    backend: str = ""
    phase: str = ""
    reason: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    template_generation: int = 0
    pool_id: str = ""
    pool_state: str = ""
    expires_at: Optional[datetime] = None
    max_expires_at: Optional[datetime] = None
    idle_deadline: Optional[datetime] = None
    lease_expires_at: Optional[datetime] = None
    workspace_path: str = ""
    workflow_id: str = ""
    cpu_cores: float = 0.0
    memory_bytes: int = 0
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None
    #: Where a create or lease got it: "warm" (an idle pool member) or "cold".
    source: str = ""
    #: The snapshot it was made from ("" for none).
    snapshot_id: str = ""
    #: "deny_all" when its sandbox may open no connection ("" for the template's).
    egress: str = ""
    #: "pause" when it is paused, not deleted, at ``expires_at``.
    expire_action: str = ""
    #: How a paused workspace was paused ("filesystem" or "full").
    paused_mode: str = ""

    # -- lifecycle ---------------------------------------------------------

    def refresh(self) -> "Workspace":
        """Reads the workspace again (a new handle)."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.id)}"), _binder(Workspace, self._client)))

    def wait(self, phase: str = "running", timeout: Optional[float] = 300) -> "Workspace":
        """Waits until the workspace is in ``phase`` and returns it."""
        return self._client._run(wait_phase(self._client, self.id, phase, timeout))

    def delete(self, wait: bool = False, timeout: Optional[float] = 300) -> "Workspace":
        """Deletes the workspace (it answers terminating); with ``wait``,
        returns once it is gone."""
        return self._client._run(_delete(self._client, self.id, wait, timeout))

    def return_to_pool(self) -> "Workspace":
        """Gives a workspace leased from a pool back to it."""
        return self._client._run(one(Req("POST", f"/v1/workspaces/{seg(self.id)}/return"), _binder(Workspace, self._client)))

    def recover(self) -> "Workspace":
        """Asks an escalated or failed workspace to try a replacement now."""
        return self._client._run(one(Req("POST", f"/v1/workspaces/{seg(self.id)}/recover"), _binder(Workspace, self._client)))

    def extend(self, by: Optional[Duration] = None, until: Optional[Union[str, datetime]] = None) -> "Workspace":
        """Moves the workspace's deadlines ``by`` a duration or to ``until``,
        never past its ``max_expires_at``."""
        if (by is None) == (until is None):
            raise ValueError("extend: give by or until")
        body = compact({"by": dur(by), "until": rfc3339(until) if until is not None else None})
        return self._client._run(one(Req("POST", f"/v1/workspaces/{seg(self.id)}/extend", json=body), _binder(Workspace, self._client)))

    # -- snapshots, fork, pause -------------------------------------------

    def snapshot(self, *, mode: Optional[str] = None, labels: Optional[Mapping[str, str]] = None, wait: bool = True,
                 timeout: Optional[float] = 300) -> "Snapshot":
        """Captures the workspace (``mode`` "filesystem", the default, or
        "full" where the backend offers it) and, with ``wait``, returns the
        snapshot once it is ready."""
        from .snapshots import snapshot_op
        return self._client._pending(snapshot_op(self._client, self.id, mode, labels, wait, timeout))

    def fork(self, count: int, *, mode: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
             ttl: Optional[Duration] = None, wait: bool = True, timeout: Optional[float] = 300) -> "Forked":
        """Makes ``count`` new workspaces from one implicit snapshot of this
        one, all or nothing against the tenant's quotas; with ``wait``,
        returns once every child runs."""
        from .snapshots import fork_op
        return self._client._pending(fork_op(self._client, self.id, count, mode, labels, ttl, wait, timeout))

    def pause(self, *, mode: Optional[str] = None, wait: bool = True, timeout: Optional[float] = 300) -> "Workspace":
        """Stops the workspace's compute and keeps its files (phase
        ``paused``); with ``wait``, returns once it is paused."""
        from .snapshots import phase_op
        body = compact({"mode": mode}) or None
        return self._client._pending(phase_op(self._client, self.id, "pause", body, "paused", wait, timeout))

    def resume(self, *, wait: bool = True, timeout: Optional[float] = 300) -> "Workspace":
        """Starts a paused workspace again, with its files; with ``wait``,
        returns once it runs."""
        from .snapshots import phase_op
        return self._client._pending(phase_op(self._client, self.id, "resume", None, "running", wait, timeout))

    def close(self) -> Any:
        """Returns a leased workspace to its pool, deletes any other; one
        already gone is fine. What the context manager does on exit."""
        return self._client._run(_close(self))

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Workspace":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- exec --------------------------------------------------------------

    def _exec_body(self, command: Command, env: Optional[Mapping[str, str]], cwd: Optional[str], user: Optional[str],
                   stdin: Optional[Union[str, bytes]], timeout: Optional[Duration]) -> Dict[str, Any]:
        if isinstance(stdin, bytes):
            stdin = stdin.decode("utf-8")
        return compact({"command": argv(command), "env": dict(env) if env else None, "cwd": cwd or None,
                        "user": user or None, "stdin": stdin or None, "timeout": dur(timeout)})

    def exec(self, command: Command, *, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
             user: Optional[str] = None, stdin: Optional[Union[str, bytes]] = None, timeout: Optional[Duration] = None,
             on_stdout: Optional[Callable[[str], Any]] = None, on_stderr: Optional[Callable[[str], Any]] = None,
             check: bool = False) -> ExecResult:
        """Runs a command and returns its exit and output once it ends.

        ``command`` is a list of arguments (run as they are) or a string
        (run with ``sh -c``). ``stdin`` is fed to it. With ``on_stdout`` or
        ``on_stderr`` the output streams to those callbacks as it arrives.
        A non-zero exit is not an error unless ``check`` is set (then
        :class:`primer.CommandFailed`).
        """
        body = self._exec_body(command, env, cwd, user, stdin, timeout)
        if on_stdout is not None or on_stderr is not None:
            s = ExecStream(self._client, seg(self.id), body, on_stdout, on_stderr)
            if self._client._async:
                return _checked_async(s.await_result(), check)  # type: ignore[return-value]
            return _check(s.wait(), check)
        op = one(Req("POST", f"/v1/workspaces/{seg(self.id)}/exec", json=body, timeout=None, idempotent=False),
                 lambda d: _check(decode(ExecResult, d), check))
        return self._client._run(op)

    def exec_stream(self, command: Command, *, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                    user: Optional[str] = None, stdin: Optional[Union[str, bytes]] = None,
                    timeout: Optional[Duration] = None) -> ExecStream:
        """Runs a command and iterates its output as it arrives
        (``for chunk in ws.exec_stream(...)``); ``.result`` holds the exit
        afterwards. Leaving the loop early cancels the command."""
        return ExecStream(self._client, seg(self.id), self._exec_body(command, env, cwd, user, stdin, timeout))

    # -- parts -------------------------------------------------------------

    @property
    def files(self) -> "Files":
        """The workspace's files."""
        return Files(self._client, self.id)

    @property
    def processes(self) -> "Processes":
        """The workspace's background processes."""
        return Processes(self._client, self.id)

    # -- ports ---------------------------------------------------------------

    def ports(self) -> List[ListeningPort]:
        """The TCP ports programs listen on inside the workspace."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.id)}/ports"), items(ListeningPort)))

    def preview(self, port: int, ttl: Optional[Duration] = None) -> Preview:
        """Makes a preview link that opens ``port`` in a browser with no key
        until ``ttl`` (default 1h) passes or it is revoked; its ``url`` is
        shown this once."""
        body = compact({"port": port, "ttl": dur(ttl)})
        return self._client._run(one(Req("POST", f"/v1/workspaces/{seg(self.id)}/previews", json=body, idempotent=False),
                                     lambda d: decode(Preview, d)))

    def previews(self) -> List[Preview]:
        """The workspace's live preview links (without their urls)."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.id)}/previews"), items(Preview)))

    def revoke_preview(self, preview_id: str) -> Preview:
        """Revokes a preview link: it answers 403 from now on."""
        return self._client._run(one(Req("DELETE", f"/v1/workspaces/{seg(self.id)}/previews/{seg(preview_id)}"),
                                     lambda d: decode(Preview, d)))

    def events(self, after: int = 0) -> List[Event]:
        """The workspace's stored events after the id ``after``, oldest first."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.id)}/events",
                                         params={"after": after or None}), items(Event)))

    def follow_events(self, last_id: int = 0) -> EventStream:
        """Iterates the workspace's events as they are written, stored ones
        after ``last_id`` first, until ``workspace.destroyed``. A dropped
        connection resumes after the last event seen."""
        return EventStream(self._client, f"/v1/workspaces/{seg(self.id)}/events", last_id, ws_id=seg(self.id))

    def session(self, agent: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None,
                instructions: Optional[str] = None) -> "Session":
        """Opens a session on the workspace (see :class:`primer.Session`)."""
        return self._client.sessions.create(self.id, agent=agent, metadata=metadata, instructions=instructions)


class CommandFailed(errors.PrimerError):
    """A command run with ``check=True`` exited non-zero (or timed out);
    ``result`` is its :class:`ExecResult`."""

    kind = "command_failed"

    def __init__(self, result: ExecResult) -> None:
        why = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        super().__init__(f"command failed: {why}: {result.stderr[-500:]}".rstrip(": "))
        self.result = result


def _check(r: ExecResult, check: bool) -> ExecResult:
    if check and not r.ok:
        raise CommandFailed(r)
    return r


async def _checked_async(coro: Any, check: bool) -> ExecResult:
    return _check(await coro, check)


def _delete(client: "_ClientBase", ws_id: str, wait: bool, timeout: Optional[float]) -> Op:
    d = yield Req("DELETE", f"/v1/workspaces/{seg(ws_id)}")
    w = decode(Workspace, d)._bind(client)
    if wait:
        yield from wait_gone(ws_id, timeout)
    return w


def _close(ws: Workspace) -> Op:
    try:
        if ws.pool_id and ws.pool_state == "leased":
            try:
                yield Req("POST", f"/v1/workspaces/{seg(ws.id)}/return")
                return "returned"
            except errors.FailedPrecondition:
                pass  # already returned, or left the pool: delete it
        yield Req("DELETE", f"/v1/workspaces/{seg(ws.id)}")
        return "deleted"
    except errors.NotFound:
        return "gone"


class Files:
    """A workspace's files. Paths are relative to the workspace root (an
    absolute path names the sandbox's own file on isolating backends)."""

    def __init__(self, client: "_ClientBase", ws_id: str) -> None:
        self._client = client
        self.ws_id = ws_id

    def _p(self, path: str) -> str:
        return file_path(self.ws_id, path)

    def read(self, path: str) -> bytes:
        """Returns the file's bytes."""
        return self._client._run(one(Req("GET", self._p(path), timeout=None, headers={"Accept": "*/*"}, raw=True),
                                     lambda r: self._bytes(path, r)))

    def _bytes(self, path: str, r: Any) -> bytes:
        if "json" in r.headers.get("Content-Type", ""):
            raise errors.Invalid(f"workspace {self.ws_id}: read {path}: is a directory", status=200)
        return r.content

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """Returns the file as text."""
        if self._client._async:
            async def text() -> str:
                return (await self.read(path)).decode(encoding)  # type: ignore[attr-defined]
            return text()  # type: ignore[return-value]
        return self.read(path).decode(encoding)

    def iter_bytes(self, path: str, chunk_size: int = CHUNK) -> Any:
        """Iterates the file's bytes as they arrive, never holding the whole
        file (``for chunk in ...`` or ``async for chunk in ...``)."""
        req = Req("GET", self._p(path), timeout=None, headers={"Accept": "*/*"})
        if self._client._async:
            return self._aiter(req, path, chunk_size)
        return self._iter(req, path, chunk_size)

    def _iter(self, req: Req, path: str, chunk_size: int) -> Iterator[bytes]:
        with self._client._core.stream(req) as resp:
            if "json" in resp.headers.get("Content-Type", ""):
                raise errors.Invalid(f"workspace {self.ws_id}: read {path}: is a directory", status=200)
            yield from resp.iter_bytes(chunk_size)

    async def _aiter(self, req: Req, path: str, chunk_size: int) -> AsyncIterator[bytes]:
        async with self._client._core.stream(req) as resp:
            if "json" in resp.headers.get("Content-Type", ""):
                raise errors.Invalid(f"workspace {self.ws_id}: read {path}: is a directory", status=200)
            async for b in resp.aiter_bytes(chunk_size):
                yield b

    def download(self, path: str, dest: Union[str, "os.PathLike[str]", BinaryIO]) -> int:
        """Streams the file to a local path or a binary file object and
        returns how many bytes were written."""
        if self._client._async:
            return self._adownload(path, dest)  # type: ignore[return-value]
        n = 0
        if isinstance(dest, (str, os.PathLike)):
            tmp = Path(str(dest) + ".part")
            try:
                with open(tmp, "wb") as f:
                    for b in self.iter_bytes(path):
                        f.write(b)
                        n += len(b)
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
            return n
        for b in self.iter_bytes(path):
            dest.write(b)
            n += len(b)
        return n

    async def _adownload(self, path: str, dest: Any) -> int:
        n = 0
        if isinstance(dest, (str, os.PathLike)):
            tmp = Path(str(dest) + ".part")
            try:
                with open(tmp, "wb") as f:
                    async for b in self.iter_bytes(path):
                        f.write(b)
                        n += len(b)
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
            return n
        async for b in self.iter_bytes(path):
            dest.write(b)
            n += len(b)
        return n

    def write(self, path: str, data: Union[bytes, str, BinaryIO, Iterable[bytes]], mode: Optional[int] = None,
              user: Optional[str] = None) -> FileInfo:
        """Writes ``data`` (bytes, text, a binary file object or an iterable
        of byte chunks, streamed) to the file, creating parent directories,
        and returns its info. ``mode`` sets the permission bits (0o600)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        content: Any = data
        if not isinstance(data, bytes):
            content = _achunks(data) if self._client._async else _chunks(data)
        headers = {"Content-Type": "application/octet-stream"}
        if mode is not None:
            headers["X-Primer-File-Mode"] = f"{mode & 0o7777:04o}"
        req = Req("PUT", self._p(path), params={"user": user}, content=content, headers=headers, timeout=None)
        return self._client._run(one(req, lambda d: decode(FileInfo, d)))

    def upload(self, local_path: Union[str, "os.PathLike[str]"], path: str, mode: Optional[int] = None) -> FileInfo:
        """Streams a local file into the workspace at ``path``; ``mode``
        defaults to the local file's permission bits."""
        if mode is None:
            mode = os.stat(local_path).st_mode & 0o777
        if self._client._async:
            return self.write(path, _afile(local_path), mode)
        return self._upload(local_path, path, mode)

    def _upload(self, local_path: Any, path: str, mode: int) -> FileInfo:
        with open(local_path, "rb") as f:
            return self.write(path, f, mode)

    def list(self, path: str = "") -> List[FileInfo]:
        """Lists a directory (the root by default)."""
        def parse(d: Any) -> List[FileInfo]:
            if not isinstance(d, dict):
                raise errors.Invalid(f"workspace {self.ws_id}: list {path}: not a directory", status=200)
            return [decode(FileInfo, x) for x in d.get("items") or []]
        return self._client._run(one(Req("GET", self._p(path)), parse))

    def stat(self, path: str) -> FileInfo:
        """Returns a file's info without reading it."""
        return self._client._run(one(Req("GET", self._p(path), params={"stat": "true"}), lambda d: decode(FileInfo, d)))

    def exists(self, path: str) -> bool:
        """Reports whether the path exists."""
        def op() -> Op:
            try:
                yield Req("GET", self._p(path), params={"stat": "true"})
                return True
            except errors.NotFound:
                return False
        return self._client._run(op())

    def mkdir(self, path: str) -> FileInfo:
        """Creates a directory and its parents."""
        return self._client._run(one(Req("PUT", self._p(path), params={"mkdir": "true"}), lambda d: decode(FileInfo, d)))

    def remove(self, path: str, recursive: bool = False) -> None:
        """Removes a file, or a directory (a non-empty one needs ``recursive``)."""
        return self._client._run(one(Req("DELETE", self._p(path), params={"recursive": "true" if recursive else None})))


def _chunks(data: Any) -> Iterator[bytes]:
    if hasattr(data, "read"):
        while True:
            b = data.read(CHUNK)
            if not b:
                return
            yield b
    else:
        for b in data:
            yield b.encode("utf-8") if isinstance(b, str) else bytes(b)


async def _achunks(data: Any) -> AsyncIterator[bytes]:
    if hasattr(data, "__aiter__"):
        async for b in data:
            yield b
        return
    for b in _chunks(data):
        yield b


async def _afile(local_path: Any) -> AsyncIterator[bytes]:
    with open(local_path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return
            yield b


@dataclass
class Process(_Bound):
    """A background process of a workspace (it outlives the request and
    any connection). Act on it with input, signal, resize, close_stdin."""

    pid: int = 0
    tag: str = ""
    command: List[str] = field(default_factory=list)
    cwd: str = ""
    user: str = ""
    pty: Optional[TerminalSize] = None
    stdin_open: bool = False
    started_at: Optional[datetime] = None
    running: bool = False
    exit: Optional[ProcessExit] = None
    workspace_id: str = ""

    def _path(self, op: str = "") -> str:
        return f"/v1/workspaces/{seg(self.workspace_id)}/processes/{self.pid}{op}"

    def refresh(self) -> "Process":
        """Reads the process again."""
        return self._client._run(one(Req("GET", self._path()), _proc(self._client, self.workspace_id)))

    def input(self, data: Union[str, bytes]) -> None:
        """Writes to the process's stdin or terminal."""
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        return self._client._run(one(Req("POST", self._path("/input"), json={"data": data}, idempotent=False)))

    def signal(self, signal: str = "TERM") -> None:
        """Sends a signal ("TERM", "KILL", "INT") to the process's group."""
        return self._client._run(one(Req("POST", self._path("/signal"), json={"signal": signal}, idempotent=False)))

    def kill(self) -> None:
        """Sends KILL."""
        return self.signal("KILL")

    def resize(self, cols: int, rows: int) -> None:
        """Sets the terminal's size."""
        return self._client._run(one(Req("POST", self._path("/resize"), json={"cols": cols, "rows": rows})))

    def close_stdin(self) -> None:
        """Closes the process's stdin (end of input)."""
        return self._client._run(one(Req("POST", self._path("/close-stdin"), json={})))

    def attach(self, replay: bool = False) -> "Attachment":
        """Opens the process's attach stream (a WebSocket): its output from
        now on (with ``replay``, first the last 16 KiB it printed), then its
        exit; and input, resize, signal, close_stdin back. Use it as a
        context manager; leaving detaches, the process runs on."""
        return Attachment(self._client, self._path("/attach") + ("?replay=true" if replay else ""))

    def wait(self, timeout: Optional[float] = 300) -> "Process":
        """Polls until the process has ended and returns it (with ``exit``)."""
        def op() -> Op:
            deadline = time.monotonic() + timeout if timeout else None
            pause = 0.05
            while True:
                p = _proc(self._client, self.workspace_id)((yield Req("GET", self._path())))
                if not p.running:
                    return p
                if deadline is not None and time.monotonic() >= deadline:
                    raise errors.Timeout(f"workspace {self.workspace_id}: process {self.pid}: still running after {timeout}s")
                yield Sleep(pause)
                pause = min(pause * 1.5, 0.5)
        return self._client._run(op())


@dataclass
class AttachEvent:
    """One message of an attach stream: ``output`` (``stream`` stdout,
    stderr or pty, ``data`` bytes), ``exit`` (the last), or ``error`` (a
    refused message)."""

    type: str
    stream: str = ""
    data: bytes = b""
    exit: Optional[ProcessExit] = None
    error: Optional[Dict[str, Any]] = None


class Attachment:
    """An open attach stream of a process. Iterate it (``for`` or ``async
    for``) for its :class:`AttachEvent` until the exit; ``output`` holds
    the bytes seen, ``exit`` how it ended."""

    def __init__(self, client: "_ClientBase", path: str) -> None:
        self._client = client
        self._path = path
        self._conn: Any = None
        #: Everything the process printed while attached.
        self.output = bytearray()
        #: How the process ended, once it has.
        self.exit: Optional[ProcessExit] = None

    def _headers(self) -> Dict[str, str]:
        return {k: v for k, v in self._client._core.headers.items() if k != "Accept"}

    def _event(self, text: Optional[str]) -> Optional[AttachEvent]:
        import base64
        import json
        if text is None:
            return None
        m = json.loads(text)
        ev = AttachEvent(type=m.get("type", ""), stream=m.get("stream", ""),
                         data=base64.b64decode(m["data"]) if m.get("data") else b"")
        if ev.type == "exit":
            ev.exit = decode(ProcessExit, m.get("exit") or {})
            self.exit = ev.exit
        elif ev.type == "error":
            ev.error = m.get("error") or {}
        elif ev.type == "output":
            self.output += ev.data
        return ev

    @staticmethod
    def _msg(type: str, **kw: Any) -> str:
        import base64
        import json
        if "data" in kw:
            d = kw["data"]
            kw["data"] = base64.b64encode(d.encode() if isinstance(d, str) else d).decode()
        return json.dumps(dict(type=type, **kw))

    # -- sync ----------------------------------------------------------------

    def open(self) -> "Attachment":
        from ._ws import SyncConn
        if self._conn is None:
            self._conn = SyncConn(self._client._core.url(self._path), self._headers(), self._client._core.timeout, self._path)
        return self

    def __enter__(self) -> "Attachment":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[AttachEvent]:
        self.open()
        while self.exit is None:
            ev = self._event(self._conn.recv_text())
            if ev is None:
                return
            yield ev

    def _send(self, text: str) -> Any:
        if self._client._async:
            return self._asend(text)
        self.open()._conn.send_text(text)
        return None

    def input(self, data: Union[str, bytes]) -> None:
        """Writes to the process's stdin or terminal."""
        return self._send(self._msg("input", data=data))

    def resize(self, cols: int, rows: int) -> None:
        """Sets the terminal's size."""
        return self._send(self._msg("resize", cols=cols, rows=rows))

    def signal(self, signal: str) -> None:
        """Sends a signal to the process."""
        return self._send(self._msg("signal", signal=signal))

    def close_stdin(self) -> None:
        """Closes the process's stdin."""
        return self._send(self._msg("close_stdin"))

    def close(self) -> Any:
        """Detaches; the process runs on."""
        if self._client._async:
            return self._aclose()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return None

    # -- async ---------------------------------------------------------------

    async def aopen(self) -> "Attachment":
        from ._ws import AsyncConn
        if self._conn is None:
            self._conn = await AsyncConn.open(self._client._core.url(self._path), self._headers(),
                                              self._client._core.timeout, self._path)
        return self

    async def __aenter__(self) -> "Attachment":
        return await self.aopen()

    async def __aexit__(self, *exc: Any) -> None:
        await self._aclose()

    async def __aiter__(self) -> AsyncIterator[AttachEvent]:
        await self.aopen()
        while self.exit is None:
            ev = self._event(await self._conn.recv_text())
            if ev is None:
                return
            yield ev

    async def _asend(self, text: str) -> None:
        await (await self.aopen())._conn.send_text(text)

    async def _aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


def _proc(client: "_ClientBase", ws_id: str) -> Callable[[Any], Process]:
    def parse(d: Any) -> Process:
        p = decode(Process, d)._bind(client)
        p.workspace_id = ws_id
        return p
    return parse


class Processes:
    """A workspace's background processes (``/processes``)."""

    def __init__(self, client: "_ClientBase", ws_id: str) -> None:
        self._client = client
        self.ws_id = ws_id

    def start(self, command: Command, *, tag: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
              cwd: Optional[str] = None, user: Optional[str] = None, stdin: Optional[str] = None,
              stdin_open: bool = False, pty: Optional["tuple[int, int]"] = None,
              timeout: Optional[Duration] = None) -> Process:
        """Starts a process that outlives the call and returns it once it
        runs. ``pty=(cols, rows)`` gives it a terminal; ``stdin_open`` keeps
        its stdin open for :meth:`Process.input`."""
        body = compact({"command": argv(command), "tag": tag, "env": dict(env) if env else None, "cwd": cwd,
                        "user": user, "stdin": stdin, "stdin_open": stdin_open or None,
                        "pty": {"cols": pty[0], "rows": pty[1]} if pty else None, "timeout": dur(timeout)})
        return self._client._run(one(Req("POST", f"/v1/workspaces/{seg(self.ws_id)}/processes", json=body, idempotent=False),
                                     _proc(self._client, self.ws_id)))

    def list(self) -> List[Process]:
        """The running processes and those that ended recently."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.ws_id)}/processes"),
                                     lambda d: [_proc(self._client, self.ws_id)(x) for x in (d or {}).get("items") or []]))

    def get(self, pid: int) -> Process:
        """One process by pid."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(self.ws_id)}/processes/{int(pid)}"),
                                     _proc(self._client, self.ws_id)))


class Workspaces:
    """``client.workspaces``: create, find, list and delete workspaces."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def create(self, template_id: Optional[str] = None, *, labels: Optional[Mapping[str, str]] = None,
               ttl: Optional[Duration] = None, env: Optional[Mapping[str, str]] = None,
               snapshot_id: Optional[str] = None, egress: Optional[str] = None, expire_action: Optional[str] = None,
               wait: bool = True, timeout: Optional[float] = 300) -> Workspace:
        """Creates a workspace of the template (``default`` unless a
        ``snapshot_id`` names the snapshot to start from, whose template it
        then takes) and, with ``wait`` (the default), returns it once it
        runs. Use it as a context manager to delete it when the block ends.
        ``env`` is the workspace's own environment (secret: no answer shows
        it); ``egress="deny_all"`` narrows its network; ``expire_action=
        "pause"`` pauses it at its ttl instead of deleting it."""
        if template_id is None and snapshot_id is None:
            template_id = "default"
        body = compact({"template_id": template_id, "labels": dict(labels) if labels else None, "ttl": dur(ttl),
                        "env": dict(env) if env else None, "snapshot_id": snapshot_id, "egress": egress,
                        "expire_action": expire_action})
        c = self._client

        def op() -> Op:
            w = decode(Workspace, (yield Req("POST", "/v1/workspaces", json=body, idempotent=False)))._bind(c)
            if wait and w.phase != "running":
                try:
                    got = yield from wait_phase(c, w.id, "running", timeout)
                except BaseException:
                    # A workspace that never became usable is not left behind.
                    try:
                        yield Req("DELETE", f"/v1/workspaces/{seg(w.id)}")
                    except errors.PrimerError:
                        pass
                    raise
                got.source = w.source
                return got
            return w

        return c._pending(op())

    def get(self, id: str) -> Workspace:
        """The workspace ``id`` (NotFound once destroyed)."""
        return self._client._run(one(Req("GET", f"/v1/workspaces/{seg(id)}"), _binder(Workspace, self._client)))

    def handle(self, id: str) -> Workspace:
        """A handle on the workspace ``id`` without reading it (no call)."""
        return Workspace(id=id)._bind(self._client)

    def list(self, *, phase: Optional[str] = None, template_id: Optional[str] = None, provider_id: Optional[str] = None,
             backend: Optional[str] = None, pool_id: Optional[str] = None, pool_state: Optional[str] = None,
             limit: Optional[int] = None) -> List[Workspace]:
        """The workspaces the filters select, newest first."""
        params = {"phase": phase, "template_id": template_id, "provider_id": provider_id, "backend": backend,
                  "pool_id": pool_id, "pool_state": pool_state, "limit": limit or None}
        return self._client._run(one(Req("GET", "/v1/workspaces", params=params),
                                     items(Workspace, lambda w: w._bind(self._client))))

    def delete(self, id: str, wait: bool = False, timeout: Optional[float] = 300) -> Workspace:
        """Deletes the workspace ``id``; with ``wait``, returns once it is gone."""
        return self._client._run(_delete(self._client, id, wait, timeout))

    def wait(self, id: str, phase: str = "running", timeout: Optional[float] = 300) -> Workspace:
        """Waits until the workspace ``id`` is in ``phase``."""
        return self._client._run(wait_phase(self._client, id, phase, timeout))

    def wait_gone(self, id: str, timeout: Optional[float] = 300) -> None:
        """Waits until the workspace ``id`` no longer exists (after a delete)."""
        return self._client._run(wait_gone(id, timeout))
