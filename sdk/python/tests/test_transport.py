"""Retries, timeouts and error decoding, against scripted answers
(httpx.MockTransport): what a real server rarely does on cue."""

from __future__ import annotations

import asyncio
import json
from typing import Callable, List

import httpx
import pytest

import primer


def scripted(answers: List[Callable[[httpx.Request], httpx.Response]], seen: List[httpx.Request]) -> httpx.MockTransport:
    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return answers[min(len(seen), len(answers)) - 1](req)
    return httpx.MockTransport(handle)


def envelope(status: int, code: str, msg: str, field: str = "", headers: dict = None) -> Callable[[httpx.Request], httpx.Response]:
    details = {"field": field} if field else {}
    return lambda req: httpx.Response(status, json={"error": {"code": code, "message": msg, "details": details}}, headers=headers)


def ok(body: dict) -> Callable[[httpx.Request], httpx.Response]:
    return lambda req: httpx.Response(200, json=body)


def client(answers, seen, **kw) -> primer.Client:
    return primer.Client("http://primer.test", "pmr.key-t.x", backoff=0.001,
                         http_client=httpx.Client(transport=scripted(answers, seen)), **kw)


def test_idempotent_calls_retry_transient_failures() -> None:
    seen: List[httpx.Request] = []
    c = client([envelope(503, "unavailable", "later"), lambda r: httpx.Response(502, text="<html>bad gateway</html>"),
                ok({"items": [{"id": "ws-1", "phase": "running"}]})], seen)
    ws = c.workspaces.list()
    assert [w.id for w in ws] == ["ws-1"] and len(seen) == 3
    assert seen[0].headers["Authorization"] == "Bearer pmr.key-t.x"
    assert seen[0].headers["User-Agent"].startswith("primer-python/")


def test_retries_give_up_with_the_last_error() -> None:
    seen: List[httpx.Request] = []
    c = client([envelope(503, "unavailable", "database down")], seen, retries=2)
    with pytest.raises(primer.Unavailable) as e:
        c.workspaces.get("ws-1")
    assert len(seen) == 3 and e.value.status == 503 and e.value.message == "database down"


def test_non_idempotent_calls_are_not_retried() -> None:
    seen: List[httpx.Request] = []
    c = client([envelope(503, "unavailable", "temporal down"), ok({})], seen)
    with pytest.raises(primer.Unavailable):
        c.workspaces.create("default", wait=False)
    assert len(seen) == 1 and seen[0].method == "POST"
    assert json.loads(seen[0].content) == {"template_id": "default"}


def test_429_with_retry_after() -> None:
    seen: List[httpx.Request] = []
    c = client([envelope(429, "resource_exhausted", "streams: cap", headers={"Retry-After": "0"}), ok({"id": "p", "size": 2})], seen)
    assert c.pools.get("p").size == 2 and len(seen) == 2
    seen.clear()
    c = client([envelope(429, "resource_exhausted", "quota", headers={"Retry-After": "30"})], seen)
    with pytest.raises(primer.QuotaExceeded) as e:
        c.pools.get("p")
    assert e.value.retry_after == 30 and len(seen) == 1  # too long to wait inside a call


def test_error_kinds_and_fields() -> None:
    cases = [
        (400, "invalid", primer.Invalid), (401, "unauthenticated", primer.Unauthorized), (403, "forbidden", primer.Forbidden),
        (404, "not_found", primer.NotFound), (409, "conflict", primer.Conflict),
        (409, "failed_precondition", primer.FailedPrecondition), (413, "too_large", primer.TooLarge),
        (429, "resource_exhausted", primer.QuotaExceeded), (500, "internal", primer.Internal),
        (504, "timeout", primer.Timeout), (405, "method_not_allowed", primer.MethodNotAllowed),
    ]
    for status, code, cls in cases:
        seen: List[httpx.Request] = []
        c = client([envelope(status, code, f"{code} happened", field="spec.id")], seen, retries=0)
        with pytest.raises(cls) as e:
            c.templates.create("t", "local", {"kind": "local"})
        assert (e.value.kind, e.value.status, e.value.message, e.value.field) == (code, status, f"{code} happened", "spec.id")
    # A kind this SDK does not know stays a PrimerError with its kind.
    c = client([envelope(418, "teapot", "short and stout")], [], retries=0)
    with pytest.raises(primer.PrimerError) as e:
        c.templates.get("t")
    assert e.value.kind == "teapot" and type(e.value) is primer.PrimerError
    # No envelope: the kind follows the status.
    c = client([lambda r: httpx.Response(404, text="nginx says no")], [], retries=0)
    with pytest.raises(primer.NotFound) as e:
        c.templates.get("t")
    assert "nginx says no" in e.value.message and "GET /v1/templates/t" in e.value.message


def test_timeouts() -> None:
    def slow(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=req)
    seen: List[httpx.Request] = []
    c = client([slow], seen, retries=3)
    with pytest.raises(primer.Timeout) as e:
        c.workspaces.get("ws-1")
    assert isinstance(e.value, TimeoutError) and len(seen) == 1  # a timeout is not retried
    # The client's timeout reaches the request; exec has none of its own.
    seen.clear()
    c = client([ok({"exit_code": 0, "stdout": "", "stderr": "", "duration_ms": 1, "timed_out": False})], seen, timeout=1.5)
    c.workspaces.handle("ws-1").exec("true")
    assert seen[0].extensions["timeout"]["read"] is None
    seen.clear()
    c = client([ok({"id": "ws-1"})], seen, timeout=1.5)
    c.workspaces.get("ws-1")
    assert seen[0].extensions["timeout"]["read"] == 1.5


def test_connection_refused_is_retried_even_for_posts() -> None:
    seen: List[httpx.Request] = []

    def refuse(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=req)
    c = client([refuse, refuse, lambda r: httpx.Response(201, json={"id": "ws-9", "phase": "pending", "source": "cold"})], seen)
    ws = c.workspaces.create("default", wait=False)
    assert ws.id == "ws-9" and ws.source == "cold" and len(seen) == 3


def test_stream_errors_inside_the_stream() -> None:
    lines = b'{"stream":"stdout","data":"part"}\n{"error":{"code":"unavailable","message":"runtime lost","details":{}}}\n'
    c = client([lambda r: httpx.Response(200, content=lines, headers={"Content-Type": "application/x-ndjson"})], [])
    s = c.workspaces.handle("ws-1").exec_stream("x")
    got = []
    with pytest.raises(primer.Unavailable) as e:
        for ch in s:
            got.append(ch.data)
    assert got == ["part"] and e.value.message == "runtime lost" and e.value.status == 200
    c = client([lambda r: httpx.Response(200, content=b'{"stream":"stdout","data":"x"}\n', headers={"Content-Type": "application/x-ndjson"})], [])
    with pytest.raises(primer.Unavailable, match="before the exit"):
        c.workspaces.handle("ws-1").exec("x", on_stdout=lambda d: None)


def test_async_retries() -> None:
    seen: List[httpx.Request] = []

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        if len(seen) == 1:
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "x", "details": {}}})
        return httpx.Response(200, json={"id": "ws-1", "phase": "running"})

    async def main() -> None:
        async with primer.AsyncClient("http://primer.test", "k", backoff=0.001,
                                      http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle))) as c:
            w = await c.workspaces.get("ws-1")
            assert w.phase == "running"

    asyncio.run(main())
    assert len(seen) == 2


def test_event_stream_resumes_after_a_drop() -> None:
    seen: List[httpx.Request] = []

    def sse(*events: tuple) -> bytes:
        return b"".join(f"id: {i}\nevent: {t}\ndata: {json.dumps({'id': i, 'workspace_id': 'ws-1', 'type': t})}\n\n".encode()
                        for i, t in events)

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        if req.url.path.endswith("/events") and len([r for r in seen if r.url.path.endswith("/events")]) == 1:
            # The first connection delivers two events and drops.
            return httpx.Response(200, content=sse((5, "workspace.provisioned"), (6, "workspace.phase_changed")),
                                  headers={"Content-Type": "text/event-stream"})
        if req.url.path.endswith("/events"):
            # The second resumes after the last id seen, replaying one.
            return httpx.Response(200, content=b": keep-alive\n\n" + sse((6, "workspace.phase_changed"), (7, "workspace.destroyed")),
                                  headers={"Content-Type": "text/event-stream"})
        return httpx.Response(200, json={"id": "ws-1", "phase": "terminating"})  # still there after the drop

    c = primer.Client("http://primer.test", "k", http_client=httpx.Client(transport=httpx.MockTransport(handle)))
    stream = c.workspaces.handle("ws-1").follow_events(last_id=4)
    got = [(e.id, e.type) for e in stream]
    assert got == [(5, "workspace.provisioned"), (6, "workspace.phase_changed"), (7, "workspace.destroyed")]
    ev = [r for r in seen if r.url.path.endswith("/events")]
    assert ev[0].headers["Last-Event-ID"] == "4" and ev[1].headers["Last-Event-ID"] == "6"
    assert ev[0].url.params["follow"] == "true" and ev[0].headers["Accept"] == "text/event-stream"
    assert stream.last_id == 7
