"""Workspaces, exec and files against a real server (local template)."""

from __future__ import annotations

import io
import os
import time

import pytest

import primer
from conftest import uid


def test_health(client: primer.Client) -> None:
    assert client.healthz() == {"status": "ok"}
    assert client.readyz() == {"status": "ready"}


def test_create_exec_delete(client: primer.Client) -> None:
    with client.workspaces.create("default", labels={"who": "pytest"}) as ws:
        assert ws.id.startswith("ws-") and ws.phase == "running" and ws.source in ("warm", "cold")
        assert ws.labels == {"who": "pytest"} and ws.backend == "local"
        r = ws.exec("echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
        r = ws.exec(["printf", "%s|", "a b", "c"])
        assert r.stdout == "a b|c|" and r.ok
        got = client.workspaces.get(ws.id)
        assert got.id == ws.id and got.phase == "running"
        assert ws.id in [w.id for w in client.workspaces.list(phase="running")]
    # The context manager deleted it: terminating now, gone soon.
    client.workspaces.wait_gone(ws.id, timeout=120)
    with pytest.raises(primer.NotFound) as e:
        client.workspaces.get(ws.id)
    assert e.value.status == 404 and e.value.kind == "not_found" and ws.id in e.value.message


def test_context_manager_deletes_when_body_raises(client: primer.Client) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with client.workspaces.create("default") as ws:
            ws.files.write("x", b"1")
            raise RuntimeError("boom")
    # Nothing else deletes it: gone means the context manager did.
    client.workspaces.wait_gone(ws.id, timeout=120)
    assert not _exists(client, ws.id)


def _exists(client: primer.Client, id: str) -> bool:
    try:
        client.workspaces.get(id)
        return True
    except primer.NotFound:
        return False


def test_create_without_wait_then_wait(client: primer.Client) -> None:
    ws = client.workspaces.create("default", wait=False)
    try:
        assert ws.phase in ("pending", "running")
        w = ws.wait("running", timeout=120)
        assert w.phase == "running"
        assert w.refresh().id == ws.id
    finally:
        ws.delete(wait=True)


def test_exec_options(ws: primer.Workspace) -> None:
    r = ws.exec(["sh", "-c", 'echo "$A-$B"; pwd'], env={"A": "1", "B": "two"}, cwd="sub" if ws.files.mkdir("sub") else None)
    assert r.stdout.splitlines()[0] == "1-two" and r.stdout.splitlines()[1].endswith("/sub")
    assert ws.exec("cat", stdin="fed in").stdout == "fed in"
    assert ws.exec("cat", stdin=b"bytes in").stdout == "bytes in"
    r = ws.exec(["sleep", "5"], timeout="300ms")
    assert r.timed_out and not r.ok
    r = ws.exec(["sleep", "5"], timeout=0.3)
    assert r.timed_out
    with pytest.raises(primer.CommandFailed) as e:
        ws.exec("echo bad >&2; exit 9", check=True)
    assert e.value.result.exit_code == 9 and "bad" in str(e.value)


def test_exec_stream_iterator_and_callbacks(ws: primer.Workspace) -> None:
    script = "for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.2; done; exit 4"
    stream = ws.exec_stream(script)
    seen = []
    times = []
    for chunk in stream:
        seen.append((chunk.stream, chunk.data))
        times.append(time.monotonic())
    assert stream.result is not None and stream.result.exit_code == 4
    assert [d for s, d in seen if s == "stdout"] == ["out1\n", "out2\n", "out3\n"]
    assert [d for s, d in seen if s == "stderr"] == ["err1\n", "err2\n", "err3\n"]
    # Streamed as produced: the first chunk came well before the last.
    assert times[-1] - times[0] > 0.3
    assert stream.result.stdout == "out1\nout2\nout3\n"

    out, err = [], []
    r = ws.exec(script, on_stdout=out.append, on_stderr=err.append)
    assert r.exit_code == 4 and "".join(out) == "out1\nout2\nout3\n" and "".join(err) == "err1\nerr2\nerr3\n"


def test_exec_stream_break_cancels(ws: primer.Workspace) -> None:
    ws.files.remove("marker") if ws.files.exists("marker") else None
    with ws.exec_stream("echo start; sleep 3; touch marker") as s:
        for chunk in s:
            assert chunk.data == "start\n"
            break
    time.sleep(3.5)
    assert not ws.files.exists("marker")


def test_files(ws: primer.Workspace, tmp_path) -> None:
    f = ws.files
    info = f.write("dir/a.txt", "hello\n", mode=0o600)
    assert (info.path, info.size, info.mode, info.is_dir) == ("dir/a.txt", 6, 0o600, False)
    assert f.read("dir/a.txt") == b"hello\n" and f.read_text("dir/a.txt") == "hello\n"
    assert f.stat("dir/a.txt").mode == 0o600
    assert [i.name for i in f.list("dir")] == ["a.txt"]
    assert "dir" in [i.name for i in f.list()]
    # Binary, from a file object, and from chunks (streamed uploads).
    blob = bytes(range(256)) * 8192  # 2 MiB
    f.write("bin/blob", io.BytesIO(blob))
    assert f.read("bin/blob") == blob
    f.write("bin/chunks", (blob[i:i + 100000] for i in range(0, len(blob), 100000)))
    assert f.stat("bin/chunks").size == len(blob)
    # Paths: upload and download, streamed.
    src = tmp_path / "src.bin"
    src.write_bytes(blob)
    os.chmod(src, 0o640)
    assert f.upload(src, "up/src.bin").mode == 0o640
    dst = tmp_path / "dst.bin"
    assert f.download("up/src.bin", dst) == len(blob) and dst.read_bytes() == blob
    buf = io.BytesIO()
    f.download("up/src.bin", buf)
    assert buf.getvalue() == blob
    assert b"".join(f.iter_bytes("up/src.bin", 4096)) == blob
    # Directories, removal, errors.
    f.mkdir("m/n/o")
    assert f.stat("m/n/o").is_dir
    with pytest.raises(primer.Conflict):
        f.remove("m")
    f.remove("m", recursive=True)
    assert not f.exists("m")
    with pytest.raises(primer.NotFound):
        f.read("missing.txt")
    with pytest.raises(primer.Invalid):
        f.read("dir")  # a directory
    with pytest.raises(primer.Invalid) as e:
        f.read("../../etc/passwd")
    assert e.value.status == 400


def test_errors(client: primer.Client) -> None:
    with pytest.raises(primer.NotFound) as e:
        client.workspaces.get("ws-0000000000000000")
    assert e.value.kind == "not_found" and e.value.status == 404
    with pytest.raises(primer.NotFound) as e:
        client.workspaces.create("no-such-template")
    assert e.value.field == "template_id"
    with pytest.raises(primer.Invalid) as e:
        client.workspaces.list(phase="nonsense")
    assert e.value.field == "phase" and e.value.status == 400
    with pytest.raises(primer.Conflict) as e:
        client.providers.create("local", "local", {"root_path": "/tmp"})
    assert e.value.status == 409
    with pytest.raises(primer.Forbidden) as e:
        client.providers.delete("local")
    assert e.value.status == 403
    with pytest.raises(primer.Unauthorized) as e:
        primer.Client(client.base_url, "pmr.key-0000.bad").workspaces.list()
    assert e.value.status == 401 and e.value.kind == "unauthenticated"
    with pytest.raises(primer.MethodNotAllowed):
        client.request("PATCH", "/v1/workspaces")
    with pytest.raises(primer.NotFound):
        client.request("GET", "/v1/no-such-route")
    # Every error is a PrimerError.
    assert issubclass(primer.QuotaExceeded, primer.PrimerError)
    assert issubclass(primer.FailedPrecondition, primer.Conflict)


def test_failed_precondition(ws: primer.Workspace) -> None:
    with pytest.raises(primer.FailedPrecondition) as e:
        ws.return_to_pool()  # it was not leased from a pool
    assert e.value.status == 409 and e.value.kind == "failed_precondition" and "not in a pool" in e.value.message
    assert isinstance(e.value, primer.Conflict)
    with pytest.raises(primer.FailedPrecondition):
        ws.recover()  # it is running


def test_unavailable_and_timeout() -> None:
    # A port nothing listens on: retried, then Unavailable.
    c = primer.Client("http://127.0.0.1:9", "k", retries=1, backoff=0.01)
    t = time.monotonic()
    with pytest.raises(primer.Unavailable) as e:
        c.workspaces.list()
    assert e.value.status == 0 and time.monotonic() - t < 5


def test_quota_exceeded(client: primer.Client) -> None:
    t = uid("quota")
    client.tenants.create(t, "quota test", primer.Quota(max_workspaces=1))
    key = client.api_keys.create("admin", tenant_id=t, name="quota").key
    try:
        with primer.Client(client.base_url, key) as c:
            with c.workspaces.create("default") as ws:
                with pytest.raises(primer.QuotaExceeded) as e:
                    c.workspaces.create("default")
                assert e.value.status == 429 and e.value.kind == "resource_exhausted"
            c.workspaces.wait_gone(ws.id)
    finally:
        for k in client.api_keys.list(tenant=t):
            client.api_keys.revoke(k.id)
        client.tenants.delete(t)
