"""The HTTP layer: one request description, two drivers (sync and async).

An operation is written once as a generator that yields :class:`Req` (an
API call; the decoded answer is sent back in) or :class:`Sleep` (a pause
between polls) and returns its result. :class:`SyncCore` runs it with
``httpx.Client``, :class:`AsyncCore` with ``httpx.AsyncClient``, so the
sync and async clients share every call, wait and retry rule; only
streams (exec output, SSE, file transfers) are read twice, once per I/O
style, through the same parsers.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json as _json
import random
import socket
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Dict, Generator, Iterator, Optional, Union

import httpx

from . import errors
from ._version import __version__

#: The timeout of a JSON call when the client is not given one, in seconds.
DEFAULT_TIMEOUT = 30.0
#: How many times an idempotent call is retried after a transient failure.
DEFAULT_RETRIES = 3

_IDEMPOTENT = frozenset(("GET", "HEAD", "PUT", "DELETE", "OPTIONS"))


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


#: Marks "use the client's JSON-call timeout".
DEFAULT: Any = _Default()


@dataclass
class Req:
    """One API call. ``timeout`` None means no timeout (streams, exec, file
    transfers: bounded by the caller); ``raw`` returns the httpx.Response
    (body read) instead of decoded JSON."""

    method: str
    path: str
    params: Optional[Dict[str, Any]] = None
    json: Any = None
    content: Any = None
    headers: Optional[Dict[str, str]] = None
    timeout: Any = DEFAULT
    idempotent: Optional[bool] = None
    raw: bool = False

    def retriable(self) -> bool:
        if self.idempotent is not None:
            return self.idempotent
        return self.method in _IDEMPOTENT and (self.content is None or isinstance(self.content, (bytes, str)))


@dataclass
class Sleep:
    """A pause of an operation (between polls)."""

    seconds: float


Op = Generator[Union[Req, Sleep], Any, Any]


def one(req: Req, parse: Optional[Callable[[Any], Any]] = None) -> Op:
    """The operation of a single call whose answer ``parse`` converts."""
    data = yield req
    return parse(data) if parse is not None else data


def _retry_after(resp: httpx.Response) -> Optional[float]:
    v = resp.headers.get("Retry-After")
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None


_NODELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _NoDelay:
    """A network backend that turns Nagle's algorithm off on every
    connection. httpx writes a request's headers and body separately;
    with Nagle on, the body waits for the server's (delayed) ACK of the
    headers, about 40 ms a call on Linux. Go's net does this by default."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @staticmethod
    def _set(stream: Any) -> Any:
        sock = stream.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(*_NODELAY)
            except OSError:
                pass
        return stream

    def connect_tcp(self, *a: Any, **kw: Any) -> Any:
        return self._set(self._inner.connect_tcp(*a, **kw))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AsyncNoDelay(_NoDelay):
    async def connect_tcp(self, *a: Any, **kw: Any) -> Any:  # type: ignore[override]
        return self._set(await self._inner.connect_tcp(*a, **kw))


def nodelay_transport(cls: Any, wrapper: Any) -> Any:
    """An httpx transport whose connections have TCP_NODELAY: through
    socket_options where httpx has them (0.24.1 and later), else by
    wrapping the connection pool's network backend (Debian's 0.23)."""
    if "socket_options" in inspect.signature(cls.__init__).parameters:
        return cls(socket_options=[_NODELAY])
    t = cls()
    pool = getattr(t, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None:
        pool._network_backend = wrapper(backend)
    return t


class _Base:
    """What both drivers share: the address, the key, the retry policy and
    the translation of answers and transport failures into results and
    :mod:`primer.errors`."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str],
        timeout: Optional[float],
        retries: int,
        backoff: float,
        user_agent: Optional[str],
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.headers = {"User-Agent": user_agent or f"primer-python/{__version__}", "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer " + token

    def url(self, path: str) -> str:
        return self.base_url + path

    def _timeout(self, req: Req) -> Any:
        return self.timeout if req.timeout is DEFAULT else req.timeout

    def _delay(self, req: Req, attempt: int, exc: Optional[BaseException] = None, resp: Optional[httpx.Response] = None) -> Optional[float]:
        """How long to wait before trying ``req`` again, or None to give up.

        A connection that could not be made is retried for any call (the
        request never left); other transport failures and 502/503/504 only
        for idempotent calls; a 429 only for idempotent calls whose
        Retry-After is short.
        """
        if attempt >= self.retries:
            return None
        pause = min(self.backoff * (2**attempt), 2.0) * (0.5 + random.random() / 2)
        if exc is not None:
            if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) and (
                req.content is None or isinstance(req.content, (bytes, str))
            ):
                return pause
            if req.retriable() and isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.TimeoutException):
                return pause
            return None
        if resp is not None and req.retriable():
            if resp.status_code in (502, 503, 504):
                return pause
            if resp.status_code == 429:
                ra = _retry_after(resp)
                if ra is not None and ra <= 10:
                    return max(ra, pause)
        return None

    def _transport_error(self, req: Req, exc: BaseException) -> errors.PrimerError:
        where = f"{req.method} {req.path}"
        if isinstance(exc, httpx.TimeoutException):
            return errors.Timeout(f"{where}: timed out ({type(exc).__name__})", status=0)
        return errors.Unavailable(f"{where}: {type(exc).__name__}: {exc}", status=0)

    def _error(self, req: Req, resp: httpx.Response) -> errors.PrimerError:
        return errors.from_response(resp.status_code, resp.content, req.method, req.path, _retry_after(resp))

    def _decode(self, req: Req, resp: httpx.Response) -> Any:
        if req.raw:
            return resp
        if not resp.content:
            return None
        ctype = resp.headers.get("Content-Type", "")
        if "json" not in ctype:
            return resp.content
        try:
            return _json.loads(resp.content)
        except ValueError as e:
            raise errors.Internal(f"{req.method} {req.path}: decode response: {e}", status=resp.status_code) from e

    def _kwargs(self, req: Req) -> Dict[str, Any]:
        kw: Dict[str, Any] = {"timeout": self._timeout(req)}
        if req.params:
            kw["params"] = {k: v for k, v in req.params.items() if v is not None and v != ""}
        headers = dict(req.headers) if req.headers else None
        if req.json is not None:
            kw["content"] = _json.dumps(req.json, separators=(",", ":")).encode()
            headers = headers or {}
            headers["Content-Type"] = "application/json"
        elif req.content is not None:
            kw["content"] = req.content
        if headers:
            kw["headers"] = headers
        return kw


class SyncCore(_Base):
    """Runs operations with a blocking ``httpx.Client``."""

    def __init__(self, base_url: str, token: Optional[str], timeout: Optional[float], retries: int, backoff: float,
                 user_agent: Optional[str], http_client: Optional[httpx.Client] = None) -> None:
        super().__init__(base_url, token, timeout, retries, backoff, user_agent)
        self._own = http_client is None
        self.http = http_client or httpx.Client(timeout=timeout, trust_env=True,
                                                transport=nodelay_transport(httpx.HTTPTransport, _NoDelay))
        self.http.headers.update(self.headers)

    def close(self) -> None:
        if self._own:
            self.http.close()

    def call(self, req: Req) -> Any:
        """Sends ``req`` with retries and returns its decoded answer."""
        attempt = 0
        url = self.url(req.path)
        kw = self._kwargs(req)
        while True:
            try:
                resp = self.http.request(req.method, url, **kw)
            except httpx.TransportError as e:
                d = self._delay(req, attempt, exc=e)
                if d is None:
                    raise self._transport_error(req, e) from e
                time.sleep(d)
                attempt += 1
                continue
            if resp.status_code >= 300:
                d = self._delay(req, attempt, resp=resp)
                if d is not None:
                    time.sleep(d)
                    attempt += 1
                    continue
                raise self._error(req, resp)
            return self._decode(req, resp)

    def run(self, op: Op) -> Any:
        """Runs an operation to its end and returns its result."""
        try:
            item = next(op)
            while True:
                if isinstance(item, Sleep):
                    time.sleep(item.seconds)
                    item = op.send(None)
                    continue
                try:
                    val = self.call(item)
                except errors.PrimerError as e:
                    item = op.throw(e)
                    continue
                item = op.send(val)
        except StopIteration as stop:
            return stop.value

    @contextlib.contextmanager
    def stream(self, req: Req) -> Iterator[httpx.Response]:
        """Opens ``req`` as a stream: the response with its body unread. A
        non-2xx answer is raised as its error; a refused connection is
        retried as :meth:`call` does."""
        attempt = 0
        kw = self._kwargs(req)
        while True:
            try:
                cm = self.http.stream(req.method, self.url(req.path), **kw)
                resp = cm.__enter__()
            except httpx.TransportError as e:
                d = self._delay(req, attempt, exc=e)
                if d is None:
                    raise self._transport_error(req, e) from e
                time.sleep(d)
                attempt += 1
                continue
            if resp.status_code >= 300:
                try:
                    resp.read()
                finally:
                    cm.__exit__(None, None, None)
                d = self._delay(req, attempt, resp=resp)
                if d is not None:
                    time.sleep(d)
                    attempt += 1
                    continue
                raise self._error(req, resp)
            try:
                yield resp
            except httpx.TransportError as e:
                raise self._transport_error(req, e) from e
            finally:
                cm.__exit__(None, None, None)
            return


class AsyncCore(_Base):
    """Runs operations with ``httpx.AsyncClient``."""

    def __init__(self, base_url: str, token: Optional[str], timeout: Optional[float], retries: int, backoff: float,
                 user_agent: Optional[str], http_client: Optional[httpx.AsyncClient] = None) -> None:
        super().__init__(base_url, token, timeout, retries, backoff, user_agent)
        self._own = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=timeout, trust_env=True,
                                                     transport=nodelay_transport(httpx.AsyncHTTPTransport, _AsyncNoDelay))
        self.http.headers.update(self.headers)

    async def close(self) -> None:
        if self._own:
            await self.http.aclose()

    async def call(self, req: Req) -> Any:
        attempt = 0
        url = self.url(req.path)
        kw = self._kwargs(req)
        while True:
            try:
                resp = await self.http.request(req.method, url, **kw)
            except httpx.TransportError as e:
                d = self._delay(req, attempt, exc=e)
                if d is None:
                    raise self._transport_error(req, e) from e
                await asyncio.sleep(d)
                attempt += 1
                continue
            if resp.status_code >= 300:
                d = self._delay(req, attempt, resp=resp)
                if d is not None:
                    await asyncio.sleep(d)
                    attempt += 1
                    continue
                raise self._error(req, resp)
            return self._decode(req, resp)

    async def run(self, op: Op) -> Any:
        try:
            item = next(op)
            while True:
                if isinstance(item, Sleep):
                    await asyncio.sleep(item.seconds)
                    item = op.send(None)
                    continue
                try:
                    val = await self.call(item)
                except errors.PrimerError as e:
                    item = op.throw(e)
                    continue
                item = op.send(val)
        except StopIteration as stop:
            return stop.value

    @contextlib.asynccontextmanager
    async def stream(self, req: Req) -> AsyncIterator[httpx.Response]:
        attempt = 0
        kw = self._kwargs(req)
        while True:
            try:
                cm = self.http.stream(req.method, self.url(req.path), **kw)
                resp = await cm.__aenter__()
            except httpx.TransportError as e:
                d = self._delay(req, attempt, exc=e)
                if d is None:
                    raise self._transport_error(req, e) from e
                await asyncio.sleep(d)
                attempt += 1
                continue
            if resp.status_code >= 300:
                try:
                    await resp.aread()
                finally:
                    await cm.__aexit__(None, None, None)
                d = self._delay(req, attempt, resp=resp)
                if d is not None:
                    await asyncio.sleep(d)
                    attempt += 1
                    continue
                raise self._error(req, resp)
            try:
                yield resp
            except httpx.TransportError as e:
                raise self._transport_error(req, e) from e
            finally:
                await cm.__aexit__(None, None, None)
            return


class SSEParser:
    """Parses a text/event-stream body line by line (WHATWG HTML,
    "server-sent events"): :meth:`feed` returns a message when a blank line
    ends one."""

    def __init__(self) -> None:
        self.id = ""
        self.event = ""
        self.data: list = []
        self.has = False

    def feed(self, line: str) -> Optional["tuple[str, str, str]"]:
        line = line.rstrip("\r\n")
        if not line:
            if not (self.has or self.event or self.id):
                return None
            msg = (self.id, self.event, "\n".join(self.data))
            self.id, self.event, self.data, self.has = "", "", [], False
            return msg
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self.data.append(value)
            self.has = True
        elif name == "event":
            self.event = value
        elif name == "id":
            self.id = value
        return None
