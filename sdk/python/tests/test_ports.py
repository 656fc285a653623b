"""Ports and preview links against a real server (local template): a dev
server in the workspace is listed and opened through a link with no key
until the link is revoked."""

from __future__ import annotations

import socket
import time

import httpx

import primer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ports_and_preview(client: primer.Client, ws: primer.Workspace) -> None:
    ws.files.write("index.html", b"<h1>from the workspace</h1>")
    port = _free_port()
    proc = ws.processes.start(["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1"], tag="web")
    try:
        deadline = time.monotonic() + 30
        while not any(p.port == port for p in ws.ports()):
            assert time.monotonic() < deadline, f"port {port} never listed: {ws.ports()}"
            time.sleep(0.1)
        assert any(p.port == port and p.address == "127.0.0.1" for p in ws.ports())

        link = ws.preview(port, ttl="10m")
        assert link.id.startswith("pv-") and link.port == port and link.url and link.expires_at is not None
        r = httpx.get(link.url + "index.html", timeout=30)
        assert r.status_code == 200 and r.text == "<h1>from the workspace</h1>"
        listed = ws.previews()
        assert [p.id for p in listed] == [link.id] and listed[0].url == ""

        revoked = ws.revoke_preview(link.id)
        assert revoked.id == link.id and revoked.revoked_at is not None
        r = httpx.get(link.url + "index.html", timeout=30)
        assert r.status_code == 403 and "revoked" in r.text
        assert ws.previews() == []
    finally:
        proc.kill()
