"""The clients: :class:`Client` (blocking) and :class:`AsyncClient`
(asyncio). Both have the same surface; on the async client every call is
awaited and every stream is read with ``async for``."""

from __future__ import annotations

from typing import Any, Optional

import httpx

from ._core import DEFAULT_RETRIES, DEFAULT_TIMEOUT, AsyncCore, Op, Req, SyncCore, one
from .config import resolve
from .eval import Runs, Suites
from .pools import Pools
from .resources import Agents, APIKeys, Audit, Events, LLMProviders, Providers, Templates, Tenants
from .sessions import Sessions
from .snapshots import Snapshots
from .workspace import Workspaces, _Pending


class _ClientBase:
    """The namespaces both clients have."""

    _async = False
    _core: Any

    def _init(self) -> None:
        self.providers = Providers(self)
        self.templates = Templates(self)
        self.pools = Pools(self)
        self.workspaces = Workspaces(self)
        self.snapshots = Snapshots(self)
        self.sessions = Sessions(self)
        self.llm_providers = LLMProviders(self)
        self.agents = Agents(self)
        self.suites = Suites(self)
        self.runs = Runs(self)
        self.tenants = Tenants(self)
        self.api_keys = APIKeys(self)
        self.audit = Audit(self)
        self.events = Events(self)

    @property
    def base_url(self) -> str:
        """The server the client talks to."""
        return self._core.base_url

    def _run(self, op: Op) -> Any:
        raise NotImplementedError

    def _pending(self, op: Op) -> Any:
        return self._run(op)

    def healthz(self) -> Any:
        """``{"status": "ok"}`` when the server process is alive."""
        return self._run(one(Req("GET", "/healthz")))

    def readyz(self) -> Any:
        """``{"status": "ready"}`` when its database and Temporal answer (else Unavailable)."""
        return self._run(one(Req("GET", "/readyz", idempotent=False)))

    def request(self, method: str, path: str, *, params: Any = None, json: Any = None) -> Any:
        """Calls any route (``/v1/...``) and returns its decoded answer: the
        way to reach what this SDK does not wrap yet."""
        return self._run(one(Req(method.upper(), path, params=params, json=json)))


class Client(_ClientBase):
    """A blocking client of Primer's API.

    ``base_url`` and ``token`` default to ``PRIMER_URL`` and
    ``PRIMER_TOKEN``, then to primectl's config file, then (token, on a
    server on this machine) to the admin key of a local ``primer serve``
    (see :mod:`primer.config`). ``timeout`` bounds each JSON call (exec,
    file transfers, streams and waits have their own bounds); idempotent
    calls are retried ``retries`` times with backoff on transient failures.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES, backoff: float = 0.1,
                 user_agent: Optional[str] = None, http_client: Optional[httpx.Client] = None) -> None:
        url, key = resolve(base_url, token)
        self._core = SyncCore(url, key, timeout, retries, backoff, user_agent, http_client)
        self._init()

    def _run(self, op: Op) -> Any:
        return self._core.run(op)

    def close(self) -> None:
        """Closes the connections."""
        self._core.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(_ClientBase):
    """An asyncio client with :class:`Client`'s surface: ``await`` every
    call, ``async for`` every stream, ``async with`` every context manager
    (``async with client.workspaces.create("default") as ws:``)."""

    _async = True

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES, backoff: float = 0.1,
                 user_agent: Optional[str] = None, http_client: Optional[httpx.AsyncClient] = None) -> None:
        url, key = resolve(base_url, token)
        self._core = AsyncCore(url, key, timeout, retries, backoff, user_agent, http_client)
        self._init()

    def _run(self, op: Op) -> Any:
        return self._core.run(op)

    def _pending(self, op: Op) -> Any:
        return _Pending(self._core.run(op))

    async def close(self) -> None:
        """Closes the connections."""
        await self._core.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
