"""Warm pools: ``client.pools`` and the :class:`Pool` handle, whose
``lease()`` is a context manager that gives the workspace back on exit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

from . import errors
from ._core import Op, Req, Sleep, one
from ._decode import decode
from ._util import Duration, compact, dur, items, seg
from .types import PoolStatus
from .workspace import Workspace, _binder, _Bound, wait_phase

if TYPE_CHECKING:  # pragma: no cover
    from .client import _ClientBase


@dataclass
class Pool(_Bound):
    """A warm pool: ``size`` running workspaces of a template kept idle so a
    lease needs no provision. ``status`` counts its members when read."""

    id: str = ""
    template_id: str = ""
    size: int = 0
    lease_ttl: str = ""
    status: PoolStatus = field(default_factory=PoolStatus)
    tenant_id: str = ""
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None

    def refresh(self) -> "Pool":
        """Reads the pool again, with its live counts."""
        return self._client.pools.get(self.id)

    def lease(self, *, labels: Optional[Mapping[str, str]] = None, lease_ttl: Optional[Duration] = None,
              wait: bool = True, timeout: Optional[float] = 300) -> Workspace:
        """Takes a workspace: an idle running member (``source`` warm), or a
        new one of the pool's template when none is idle (cold; with
        ``wait``, returned once it runs). As a context manager
        (``with pool.lease() as ws:``) a warm lease goes back to the pool on
        exit and a cold one is deleted."""
        body = compact({"labels": dict(labels) if labels else None, "lease_ttl": dur(lease_ttl)}) or None
        c = self._client

        def op() -> Op:
            d = yield Req("POST", f"/v1/pools/{seg(self.id)}/lease", json=body, idempotent=False)
            w = decode(Workspace, d.get("workspace") or {})._bind(c)
            w.source = d.get("source", "")
            if wait and w.phase != "running":
                got = yield from wait_phase(c, w.id, "running", timeout)
                got.source = w.source
                return got
            return w

        return c._pending(op())

    def wait_ready(self, idle: Optional[int] = None, timeout: Optional[float] = 300) -> "Pool":
        """Waits until ``idle`` members (default: the pool's size) are idle
        and running, and returns the pool."""
        c = self._client
        want = idle if idle is not None else self.size

        def op() -> Op:
            deadline = time.monotonic() + timeout if timeout else None
            while True:
                p = decode(Pool, (yield Req("GET", f"/v1/pools/{seg(self.id)}")))._bind(c)
                if p.status.idle >= want:
                    return p
                if deadline is not None and time.monotonic() >= deadline:
                    raise errors.Timeout(f"pool {self.id}: {p.status.idle} of {want} idle after {timeout}s")
                yield Sleep(0.2)

        return c._run(op())

    def update(self, *, template_id: Optional[str] = None, size: Optional[int] = None,
               lease_ttl: Optional[Duration] = None) -> "Pool":
        """Changes the pool's template, size or lease ttl (the rest kept)."""
        return self._client.pools.update(self.id, template_id=template_id or self.template_id,
                                         size=size if size is not None else self.size,
                                         lease_ttl=lease_ttl if lease_ttl is not None else (self.lease_ttl or None))

    def delete(self) -> "Pool":
        """Deletes the pool; its idle members go, leased ones stay with their lessees."""
        return self._client.pools.delete(self.id)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._client._run(_delete_quietly(self.id))

    async def __aenter__(self) -> "Pool":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._client._run(_delete_quietly(self.id))


def _delete_quietly(pool_id: str) -> Op:
    try:
        yield Req("DELETE", f"/v1/pools/{seg(pool_id)}")
    except errors.NotFound:
        pass


class Pools:
    """``client.pools``: warm pools of a template."""

    def __init__(self, client: "_ClientBase") -> None:
        self._client = client

    def create(self, id: str, template_id: str, size: int = 0, lease_ttl: Optional[Duration] = None) -> Pool:
        """Creates a pool (size 0: the server's default, 3); its workflow
        fills it after the answer (see :meth:`Pool.wait_ready`)."""
        body = compact({"id": id, "template_id": template_id, "size": size or None, "lease_ttl": dur(lease_ttl)})
        return self._client._pending(one(Req("POST", "/v1/pools", json=body, idempotent=False), _binder(Pool, self._client)))

    def get(self, id: str) -> Pool:
        """The pool ``id`` with its live counts."""
        return self._client._run(one(Req("GET", f"/v1/pools/{seg(id)}"), _binder(Pool, self._client)))

    def list(self, template_id: Optional[str] = None) -> List[Pool]:
        """Every pool (of a template), by id."""
        return self._client._run(one(Req("GET", "/v1/pools", params={"template_id": template_id}),
                                     items(Pool, lambda p: p._bind(self._client))))

    def update(self, id: str, *, template_id: str, size: int = 0, lease_ttl: Optional[Duration] = None) -> Pool:
        """Replaces the pool's template, size and lease ttl."""
        body = compact({"template_id": template_id, "size": size or None, "lease_ttl": dur(lease_ttl)})
        return self._client._run(one(Req("PUT", f"/v1/pools/{seg(id)}", json=body), _binder(Pool, self._client)))

    def delete(self, id: str) -> Pool:
        """Deletes the pool and returns it as it was."""
        return self._client._run(one(Req("DELETE", f"/v1/pools/{seg(id)}"), _binder(Pool, self._client)))

    def lease(self, id: str, **kw: Any) -> Workspace:
        """Leases from the pool ``id`` (see :meth:`Pool.lease`)."""
        return Pool(id=id)._bind(self._client).lease(**kw)
