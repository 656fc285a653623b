"""Processes, events, lifetimes, providers and templates, pools and
leases, and the admin's tenants, keys and audit log."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

import primer
from conftest import uid


def test_processes(ws: primer.Workspace) -> None:
    p = ws.processes.start(["sh", "-c", "read line; echo got:$line; sleep 30"], tag="reader", stdin_open=True)
    assert p.pid > 0 and p.running and p.tag == "reader" and p.stdin_open
    assert [x.pid for x in ws.processes.list() if x.running] == [p.pid]
    with pytest.raises(primer.Conflict):
        ws.processes.start(["sleep", "1"], tag="reader")  # a running process has the tag
    p.input("hello\n")
    p.signal("TERM")
    done = p.wait(timeout=30)
    assert not done.running and done.exit is not None and done.exit.signal in ("SIGTERM", "TERM", "terminated")
    assert ws.processes.get(p.pid).running is False
    with pytest.raises(primer.Conflict):
        done.input("late\n")  # it ended
    q = ws.processes.start("echo bg > bg.txt", timeout="10s")
    q.wait(timeout=30)
    assert ws.files.read("bg.txt") == b"bg\n"
    t = ws.processes.start(["sh"], pty=(80, 24))
    assert t.pty is not None and t.pty.cols == 80
    t.resize(100, 30)
    assert t.refresh().pty.cols == 100
    t.kill()
    t.wait(timeout=30)
    with pytest.raises(primer.NotFound):
        ws.processes.get(999999)


def test_workspace_events_follow_and_resume(client: primer.Client) -> None:
    ws = client.workspaces.create("default")
    events = ws.events()
    assert "workspace.provisioned" in [e.type for e in events]
    first = events[0]
    # Resume after the first: the stored ones after it come first.
    stream = ws.follow_events(last_id=first.id)
    seen = []
    deleter = threading.Timer(0.5, ws.delete)
    deleter.start()
    try:
        for ev in stream:
            seen.append(ev)
    finally:
        deleter.cancel()
    types = [e.type for e in seen]
    assert first.id not in [e.id for e in seen]
    assert types[-1] == "workspace.destroyed", types
    assert [e.id for e in seen] == sorted(e.id for e in seen)
    assert stream.last_id == seen[-1].id


def test_tenant_events(client: primer.Client) -> None:
    page = client.events.list(limit=5)
    assert page.latest_id >= 0 and len(page.items) <= 5
    with client.events.follow(after=page.latest_id) as stream:
        with client.workspaces.create("default") as ws:
            for ev in stream:
                if ev.workspace_id == ws.id and ev.type == "workspace.provisioned":
                    break
    assert stream.last_id > page.latest_id


def test_lifetimes_extend(client: primer.Client) -> None:
    tid = uid("ttl")
    client.templates.create(tid, "local", {"kind": "local", "lifetime": {"max": "2h", "idle": "1h"}})
    try:
        with client.workspaces.create(tid, ttl="10m") as ws:
            assert ws.expires_at is not None and ws.max_expires_at is not None
            w = ws.extend(by="20m")
            assert w.expires_at > ws.expires_at
            until = datetime.now(timezone.utc) + timedelta(minutes=90)
            w2 = ws.extend(until=until)
            assert abs((w2.expires_at - until).total_seconds()) < 2
            with pytest.raises(primer.Invalid) as e:
                ws.extend(by=timedelta(hours=5))
            assert e.value.field == "by"
        with client.workspaces.create("default") as ws:
            with pytest.raises(primer.FailedPrecondition):
                ws.extend(by=60)  # no deadline to move
        client.workspaces.wait_gone(ws.id)
    finally:
        _delete_template(client, tid)


def _delete_template(client: primer.Client, tid: str) -> None:
    for _ in range(100):
        try:
            client.templates.delete(tid)
            return
        except primer.Conflict:
            time.sleep(0.2)  # its workspaces are still being deleted


def test_providers_and_templates(client: primer.Client, tmp_path) -> None:
    pid, tid = uid("prov"), uid("tmpl")
    p = client.providers.create(pid, "local", {"root_path": str(tmp_path)})
    assert (p.id, p.provider, p.config["root_path"]) == (pid, "local", str(tmp_path))
    assert pid in [x.id for x in client.providers.list()]
    t = client.templates.create(tid, pid, {"kind": "local", "env": {"SECRET": "s3cret"}}, description="d")
    assert t.generation == 1 and t.backend["env"] == {"SECRET": "(redacted)"}
    t2 = client.templates.update(tid, pid, {"kind": "local", "env": {"SECRET": "(redacted)"}}, description="d2")
    assert t2.generation == 2 and t2.description == "d2"
    assert [x.id for x in client.templates.list(provider_id=pid)] == [tid]
    with client.workspaces.create(tid) as ws:
        assert ws.exec("echo $SECRET").stdout == "s3cret\n"
    with pytest.raises(primer.Conflict):
        client.providers.delete(pid)  # a template uses it
    _delete_template(client, tid)
    client.providers.update(pid, "local", {"root_path": str(tmp_path / "x")})
    client.providers.delete(pid)
    with pytest.raises(primer.NotFound):
        client.providers.get(pid)
    with pytest.raises(primer.Invalid) as e:
        client.templates.create(uid("bad"), "local", {"kind": "container"})
    assert e.value.field == "spec.backend.kind"


def test_pool_lease_context_manager(client: primer.Client) -> None:
    pid = uid("pool")
    with client.pools.create(pid, "default", size=2) as pool:
        pool = pool.wait_ready(timeout=120)
        assert pool.status.idle == 2 and pool.size == 2
        with pool.lease(labels={"job": "1"}) as ws:
            assert ws.source == "warm" and ws.pool_state == "leased" and ws.pool_id == pid
            ws.files.write("scratch.txt", "dirty")
            leased = ws.id
            assert client.pools.get(pid).status.leased == 1
        # Given back: it is reset and idle in its pool again.
        deadline = time.monotonic() + 120
        while client.workspaces.get(leased).pool_state != "idle":
            assert time.monotonic() < deadline, "the lease never came back idle"
            time.sleep(0.2)
        # A body that raises still gives the workspace back.
        with pytest.raises(ZeroDivisionError):
            with pool.lease() as ws2:
                1 / 0
        assert client.workspaces.get(ws2.id).pool_state in ("returning", "idle")
        # Three leases of a pool of two (both idle again): the third is
        # cold (a plain workspace), deleted on exit instead.
        pool.wait_ready(timeout=120)
        with pool.lease() as a, pool.lease() as b, pool.lease() as c:
            assert sorted([a.source, b.source, c.source]) == ["cold", "warm", "warm"]
            cold = [w for w in (a, b, c) if w.source == "cold"][0]
            assert cold.pool_id == "" and cold.phase == "running"
        client.workspaces.wait_gone(cold.id)
        assert client.pools.update(pid, template_id="default", size=1).size == 1
        assert pid in [p.id for p in client.pools.list(template_id="default")]
    with pytest.raises(primer.NotFound):
        client.pools.get(pid)


def test_admin_tenants_keys_audit(client: primer.Client) -> None:
    t = uid("team")
    ten = client.tenants.create(t, "a team", {"max_workspaces": 3})
    assert ten.quota.max_workspaces == 3
    assert client.tenants.get(t).usage is not None
    assert client.tenants.update(t, "renamed", primer.Quota(max_pools=2)).quota.max_pools == 2
    k = client.api_keys.create("member", tenant_id=t, name="ci", ttl="1h")
    assert k.key.startswith("pmr.") and k.role == "member" and k.expires_at is not None
    v = client.api_keys.create("viewer", tenant_id=t, name="ro")
    with primer.Client(client.base_url, k.key) as member:
        assert [x.id for x in member.tenants.list()] == [t]
        with pytest.raises(primer.Forbidden):
            member.tenants.create(uid("nope"))
        with pytest.raises(primer.NotFound):
            member.tenants.get("default")
        child = member.api_keys.create("viewer", name="child")
        assert child.parent_id == k.id
    with primer.Client(client.base_url, v.key) as viewer:
        viewer.workspaces.list()
        with pytest.raises(primer.Forbidden):
            viewer.workspaces.create("default")
    assert {x.id for x in client.api_keys.list(tenant=t)} >= {k.id, v.id, child.id}
    tree = client.api_keys.list(tenant=t, tree=True)
    assert [x.depth for x in tree if x.id == child.id] == [1]
    r = client.api_keys.revoke(k.id)
    assert r.revoked_at is not None and r.revoked_below == 1
    with pytest.raises(primer.Unauthorized):
        primer.Client(client.base_url, child.key).workspaces.list()
    client.api_keys.revoke(v.id)
    assert client.api_keys.get(v.id).revoked_at is not None
    entries = client.audit.list(tenant=t, limit=50)
    # The member's writes are in its tenant's audit log, its refusal too.
    mine = sorted((e.action, e.status, e.result) for e in entries if e.key_id == k.id)
    assert mine == [("apikeys.create", 201, "ok"), ("tenants.create", 403, "forbidden")], mine
    assert client.audit.list(limit=5)[0].id > 0
    client.tenants.delete(t)
    with pytest.raises(primer.NotFound):
        client.tenants.get(t)


def test_process_attach(ws: primer.Workspace) -> None:
    p = ws.processes.start(["sh", "-c", "echo ready; read x; echo got:$x >&2; exit 7"], stdin_open=True)
    with p.attach(replay=True) as a:
        for ev in a:
            if ev.type == "output" and ev.data == b"ready\n":
                a.input("hello\n")
    assert a.exit is not None and a.exit.exit_code == 7
    assert bytes(a.output) == b"ready\ngot:hello\n"
    # A terminal: input, output and the exit through the stream.
    t = ws.processes.start(["sh"], pty=(80, 24))
    with t.attach() as a:
        a.resize(100, 30)
        a.input("echo pty-$((40+2))\n")
        for ev in a:
            assert ev.type in ("output", "exit"), ev
            if ev.type == "output" and ev.stream == "pty" and b"pty-42" in a.output:
                a.input("exit 3\n")
                break
        for _ in a:
            pass
    assert a.exit is not None and a.exit.exit_code == 3
    # Attaching to a process that ended gives its exit at once.
    assert [e.type for e in p.attach()] == ["exit"]
    with pytest.raises(primer.NotFound) as e:
        primer.Process(pid=999999, workspace_id=ws.id)._bind(ws._client).attach().open()
    assert e.value.status == 404
