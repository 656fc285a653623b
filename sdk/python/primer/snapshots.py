"""Snapshots, forks, pause and resume: ``client.snapshots``, the
:class:`Snapshot` handle, and the workspace's ``snapshot()``, ``fork()``,
``pause()`` and ``resume()`` (see :class:`primer.Workspace`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from . import errors
from ._core import Op, Req, Sleep, one
from ._decode import decode
from ._util import Duration, compact, dur, items, seg
from .workspace import Workspace, _binder, _Bound, wait_phase

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase


@dataclass
class Snapshot(_Bound):
    """A capture of a workspace's sandbox that new workspaces start from
    (``client.workspaces.create(snapshot_id=...)``). ``phase`` is
    ``creating``, ``ready``, ``failed`` (see ``reason``) or ``deleting``;
    ``bytes`` counts against the tenant's ``max_snapshot_bytes``."""

    id: str = ""
    tenant_id: str = ""
    workspace_id: str = ""
    template_id: str = ""
    provider_id: str = ""
    backend: str = ""
    mode: str = ""
    phase: str = ""
    reason: str = ""
    bytes: int = 0
    labels: Dict[str, str] = field(default_factory=dict)
    #: A fork's own snapshot, removed once nothing made from it is left.
    implicit: bool = False
    created_at: Optional[datetime] = None
    ready_at: Optional[datetime] = None

    def refresh(self) -> "Snapshot":
        """Reads the snapshot again."""
        return self._client.snapshots.get(self.id)

    def wait(self, timeout: Optional[float] = 300) -> "Snapshot":
        """Waits until the snapshot is ``ready`` (SnapshotFailed when it
        failed or is being deleted)."""
        return self._client._run(wait_ready(self._client, self.id, timeout))

    def delete(self) -> "Snapshot":
        """Deletes the snapshot (it answers ``deleting``); workspaces made
        from it keep their files."""
        return self._client.snapshots.delete(self.id)


@dataclass
class Forked:
    """A fork's answer: its implicit snapshot and the new workspaces."""

    snapshot: Snapshot
    workspaces: List[Workspace]


def wait_ready(client: "_ClientBase", snap_id: str, timeout: Optional[float]) -> Op:
    """Polls the snapshot until it is ready; failed or deleting raises."""
    deadline = time.monotonic() + timeout if timeout else None
    pause = 0.05
    while True:
        s = decode(Snapshot, (yield Req("GET", f"/v1/snapshots/{seg(snap_id)}")))._bind(client)
        if s.phase == "ready":
            return s
        if s.phase in ("failed", "deleting"):
            why = f": {s.reason}" if s.reason else ""
            raise errors.FailedPrecondition(f"snapshot {snap_id}: {s.phase}{why}", status=409,
                                            details={"phase": s.phase, "reason": s.reason})
        if deadline is not None and time.monotonic() >= deadline:
            raise errors.Timeout(f"snapshot {snap_id}: wait for ready: still {s.phase} after {timeout}s")
        yield Sleep(pause)
        pause = min(pause * 1.5, 0.5)


def snapshot_op(client: "_ClientBase", ws_id: str, mode: Optional[str], labels: Optional[Mapping[str, str]],
                wait: bool, timeout: Optional[float]) -> Op:
    body = compact({"mode": mode, "labels": dict(labels) if labels else None}) or None
    s = decode(Snapshot, (yield Req("POST", f"/v1/workspaces/{seg(ws_id)}/snapshots", json=body, idempotent=False)))
    s._bind(client)
    if wait and s.phase != "ready":
        return (yield from wait_ready(client, s.id, timeout))
    return s


def fork_op(client: "_ClientBase", ws_id: str, count: int, mode: Optional[str], labels: Optional[Mapping[str, str]],
            ttl: Optional[Duration], wait: bool, timeout: Optional[float]) -> Op:
    body = compact({"count": count, "mode": mode, "labels": dict(labels) if labels else None, "ttl": dur(ttl)})
    d = yield Req("POST", f"/v1/workspaces/{seg(ws_id)}/fork", json=body, idempotent=False)
    snap = decode(Snapshot, d.get("snapshot") or {})._bind(client)
    children = [decode(Workspace, w)._bind(client) for w in d.get("workspaces") or []]
    if wait:
        # The children provision at once, each as the capture is ready.
        running = []
        for w in children:
            running.append((yield from wait_phase(client, w.id, "running", timeout)))
        children = running
    return Forked(snapshot=snap, workspaces=children)


def phase_op(client: "_ClientBase", ws_id: str, action: str, body: Optional[dict], phase: str, wait: bool,
             timeout: Optional[float]) -> Op:
    w = decode(Workspace, (yield Req("POST", f"/v1/workspaces/{seg(ws_id)}/{action}", json=body, idempotent=False)))
    w._bind(client)
    if wait and w.phase != phase:
        return (yield from wait_phase(client, ws_id, phase, timeout))
    return w


class Snapshots:
    """``client.snapshots``: find, list, wait for and delete snapshots
    (take one with ``workspace.snapshot()``)."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def get(self, id: str) -> Snapshot:
        """The snapshot ``id`` (NotFound when unknown or another tenant's)."""
        return self._client._run(one(Req("GET", f"/v1/snapshots/{seg(id)}"), _binder(Snapshot, self._client)))

    def list(self, *, workspace_id: Optional[str] = None, phase: Optional[str] = None) -> List[Snapshot]:
        """The snapshots the filters select, newest first."""
        return self._client._run(one(Req("GET", "/v1/snapshots", params={"workspace_id": workspace_id, "phase": phase}),
                                     items(Snapshot, lambda s: s._bind(self._client))))

    def wait(self, id: str, timeout: Optional[float] = 300) -> Snapshot:
        """Waits until the snapshot ``id`` is ready."""
        return self._client._run(wait_ready(self._client, id, timeout))

    def delete(self, id: str) -> Snapshot:
        """Deletes the snapshot ``id`` (Conflict while a pool fills from it)."""
        return self._client._run(one(Req("DELETE", f"/v1/snapshots/{seg(id)}"), _binder(Snapshot, self._client)))
