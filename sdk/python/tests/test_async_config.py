"""The asyncio client (the same surface, awaited), and where a client
finds its server and key: as primectl does."""

from __future__ import annotations

import asyncio
import io
import os
import warnings

import pytest

import primer
from primer import config


def test_async_client(server: "tuple[str, str]", model) -> None:
    url, key = server

    async def main() -> None:
        async with primer.AsyncClient(url, key) as c:
            assert (await c.healthz()) == {"status": "ok"}
            async with c.workspaces.create("default", labels={"async": "yes"}) as ws:
                assert ws.phase == "running" and ws.labels == {"async": "yes"}
                r = await ws.exec("echo async; exit 2")
                assert (r.exit_code, r.stdout) == (2, "async\n")
                chunks = [ch.data async for ch in ws.exec_stream("echo a; sleep 0.1; echo b")]
                assert "".join(chunks) == "a\nb\n"
                got = []
                r = await ws.exec("cat", stdin="cb", on_stdout=got.append)
                assert r.stdout == "cb" and got == ["cb"]
                await ws.files.write("f.txt", b"async file")
                assert await ws.files.read("f.txt") == b"async file"
                assert await ws.files.read_text("f.txt") == "async file"
                assert b"".join([b async for b in ws.files.iter_bytes("f.txt")]) == b"async file"
                buf = io.BytesIO()
                assert await ws.files.download("f.txt", buf) == 10
                assert [f.name for f in await ws.files.list()] == ["f.txt"]
                with pytest.raises(primer.NotFound):
                    await ws.files.read("nope")
                # Many calls at once on one client.
                rs = await asyncio.gather(*[ws.exec(["echo", str(i)]) for i in range(20)])
                assert [r.stdout for r in rs] == [f"{i}\n" for i in range(20)]
                p = await ws.processes.start(["sleep", "30"], tag="s")
                await p.kill()
                assert (await p.wait(timeout=30)).running is False
                p = await ws.processes.start(["sh", "-c", "read x; echo async:$x"], stdin_open=True)
                async with p.attach() as a:
                    await a.input("yo\n")
                    async for _ in a:
                        pass
                assert bytes(a.output) == b"async:yo\n" and a.exit.exit_code == 0
                s = await ws.session()
                e = await s.exec("echo in-session")
                assert e.stdout == "in-session\n" and len(e.commit) == 40
                assert (await s.history()).items[0].commit == e.commit
                await s.end()
                evs = await ws.events()
                assert evs and evs[0].workspace_id == ws.id
            await c.workspaces.wait_gone(ws.id)
            with pytest.raises(primer.NotFound):
                await c.workspaces.get(ws.id)
            # The body raising still deletes it.
            with pytest.raises(ValueError):
                async with c.workspaces.create("default") as w2:
                    raise ValueError("x")
            await c.workspaces.wait_gone(w2.id)
            # An agent run, its transcript read with async for.
            lp, ag = f"amodel-{os.getpid()}", f"aagent-{os.getpid()}"
            await c.llm_providers.create(lp, "openai", model.url, api_key="sk-async")
            await c.agents.create(ag, {"provider_id": lp, "model_name": "fake"}, max_turns=5)
            async with c.workspaces.create("default") as ws:
                s = await ws.session()
                stream = await s.run(ag, "go")
                roles = [e.role async for e in stream]
                assert roles[0] == "user" and roles.count("tool") == 2 and stream.run.end_reason == "completed"
                assert await ws.files.read("out.txt") == b"42\n"
            await c.agents.delete(ag)
            await c.llm_providers.delete(lp)
            # A pool and a lease, as async context managers.
            async with c.pools.create(f"apool-{os.getpid()}", "default", size=1) as pool:
                pool = await pool.wait_ready(timeout=120)
                async with pool.lease() as leased:
                    assert leased.source == "warm" and leased.pool_state == "leased"
                    assert (await leased.exec("echo leased")).stdout == "leased\n"
            with pytest.raises(primer.NotFound):
                await c.pools.get(pool.id)
            # An eval run, awaited to its end.
            suite = await c.suites.create(f"async-{os.getpid()}", [primer.Case("ok", "true")], template_id="default")
            run = await suite.run(wait=True, timeout=300)
            assert run.passed and (await run.results())[0].passed
            await suite.delete()

    asyncio.run(main())


def test_config_discovery(tmp_path, monkeypatch) -> None:
    for k in ("PRIMER_URL", "PRIMER_TOKEN", "PRIMER_CONFIG", "PRIMER_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    # Nothing anywhere: the default address, no key.
    assert config.resolve() == ("http://127.0.0.1:8080", None)
    # A local `primer serve`'s admin key in ./.data (or above) on loopback.
    (tmp_path / ".data").mkdir()
    (tmp_path / ".data" / "admin.key").write_text("pmr.key-local.abc\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert config.resolve() == ("http://127.0.0.1:8080", "pmr.key-local.abc")
    # ...but never sent to another machine.
    assert config.resolve("https://primer.example.com") == ("https://primer.example.com", None)
    # PRIMER_DATA_DIR wins over .data.
    dd = tmp_path / "dd"
    dd.mkdir()
    (dd / "admin.key").write_text("pmr.key-dd.x")
    monkeypatch.setenv("PRIMER_DATA_DIR", str(dd))
    assert config.resolve("localhost:9000") == ("http://localhost:9000", "pmr.key-dd.x")
    # The config file (primectl's), then the environment, then arguments.
    cfg = tmp_path / "home" / ".config" / "primer" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("# primectl\nurl: https://cfg.example\ntoken: 'pmr.key-cfg.y'\n")
    os.chmod(cfg, 0o600)
    assert config.resolve() == ("https://cfg.example", "pmr.key-cfg.y")
    monkeypatch.setenv("PRIMER_URL", "http://env.example:1/")
    monkeypatch.setenv("PRIMER_TOKEN", "pmr.key-env.z")
    assert config.resolve() == ("http://env.example:1", "pmr.key-env.z")
    assert config.resolve("http://arg", "pmr.key-arg.w") == ("http://arg", "pmr.key-arg.w")
    # PRIMER_CONFIG names another file; a malformed file is a warning and ignored.
    other = tmp_path / "other.yaml"
    other.write_text("nonsense\n")
    os.chmod(other, 0o600)
    monkeypatch.setenv("PRIMER_CONFIG", str(other))
    monkeypatch.delenv("PRIMER_URL")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert config.resolve()[0] == "http://127.0.0.1:8080"
    assert any("ignoring" in str(x.message) for x in w)
    # A file others may read is used, with a warning to chmod it.
    other.write_text("url: http://open.example\n")
    os.chmod(other, 0o644)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert config.resolve()[0] == "http://open.example"
    assert any("chmod 600" in str(x.message) for x in w)


def test_client_reads_environment(server: "tuple[str, str]", monkeypatch) -> None:
    url, key = server
    monkeypatch.setenv("PRIMER_URL", url)
    monkeypatch.setenv("PRIMER_TOKEN", key)
    with primer.Client() as c:
        assert c.base_url == url.rstrip("/")
        c.workspaces.list(limit=1)
