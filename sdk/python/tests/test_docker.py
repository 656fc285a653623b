"""The same calls on a Docker template: an isolated sandbox (absolute
paths, its own python3)."""

from __future__ import annotations

import pytest

import primer


def test_docker_workspace(client: primer.Client, docker_template: str) -> None:
    with client.workspaces.create(docker_template, timeout=300) as ws:
        assert ws.backend == "container" and ws.phase == "running"
        r = ws.exec(["python3", "-c", "import sys; print(sys.stdin.read().upper())"], stdin="shout")
        assert r.stdout == "SHOUT\n" and r.ok
        chunks = [c.data for c in ws.exec_stream(["sh", "-c", "echo a; sleep 0.2; echo b"])]
        assert "".join(chunks) == "a\nb\n"
        ws.files.write("job/main.py", "print(sum(range(10)))\n")
        assert ws.exec(["python3", "job/main.py"]).stdout == "45\n"
        # Absolute paths reach the sandbox's own files on an isolating backend.
        assert ws.files.read("/etc/hostname").strip() != b""
        ws.files.write("/tmp/abs.txt", b"abs")
        assert ws.exec(["cat", "/tmp/abs.txt"]).stdout == "abs"
        assert ws.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n"
        # A session's calls and a background process in the container.
        with ws.session(agent="pytest") as s:
            w = s.write("s.py", "print('in session')\n")
            e = s.exec("python3 s.py")
            assert e.stdout == "in session\n" and [x.commit for x in s.history().items] == [e.commit, w.commit]
        p = ws.processes.start(["python3", "-c", "import sys; print(input().upper())"], stdin_open=True)
        with p.attach() as a:
            a.input("container\n")
            for _ in a:
                pass
        assert bytes(a.output) == b"CONTAINER\n" and a.exit.exit_code == 0
        events = [e.type for e in ws.events()]
        assert "workspace.provisioned" in events
    client.workspaces.wait_gone(ws.id, timeout=300)


def test_docker_context_manager_cleans_up_on_error(client: primer.Client, docker_template: str) -> None:
    with pytest.raises(KeyError):
        with client.workspaces.create(docker_template, timeout=300) as ws:
            ws.exec("true", check=True)
            raise KeyError("body failed")
    client.workspaces.wait_gone(ws.id, timeout=300)


def test_docker_pool_lease_and_eval(client: primer.Client, docker_template: str) -> None:
    from conftest import uid

    with client.pools.create(uid("dpool"), docker_template, size=1) as pool:
        pool.wait_ready(timeout=300)
        with pool.lease() as ws:
            assert ws.source == "warm" and ws.backend == "container"
            ws.files.write("dirty.txt", "x")
        # Given back and reset: the next lease finds the root empty again.
        pool.wait_ready(timeout=300)
        with pool.lease() as ws2:
            assert ws2.id == ws.id and not ws2.files.exists("dirty.txt")
    sid = uid("dsuite")
    suite = client.suites.create(sid, [
        primer.Case("py", ["python3", "-c", "print(6 * 7)"], expect=primer.Expect(stdout_contains=["42"])),
        primer.Case("file", "python3 w.py && cat out", files={"w.py": "open('out', 'w').write('ok')\n"},
                    expect=primer.Expect(files={"out": "ok"})),
    ], template_id=docker_template, concurrency=2)
    try:
        run = suite.run(wait=True, timeout=600)
        assert run.passed, [(r.case_id, r.verdict, r.reason) for r in run.results()]
        assert {a.workspace_id for r in run.results() for a in r.attempts} != set()
    finally:
        client.suites.delete(sid)
