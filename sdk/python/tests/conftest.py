"""The test session's Primer: the server at PRIMER_URL (with PRIMER_TOKEN),
as e2e's TestSDKPython starts it; without PRIMER_URL, a `primer serve` this
session builds from the repository and starts on free ports in a temporary
data directory, stopped at the end.

Docker tests need PRIMER_SDK_DOCKER_SOCKET and PRIMER_SDK_PYTHON_IMAGE
(TestSDKPython sets them); without them they skip, unless
PRIMER_SDK_REQUIRE_DOCKER=1, when they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator

import httpx
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package under test, not an installed one
sys.path.insert(0, str(HERE))

import primer  # noqa: E402
from fake_model import FakeModel  # noqa: E402

REPO = HERE.parent.parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server() -> Iterator["tuple[str, str]"]:
    """The URL and admin key of the Primer the tests drive."""
    url = os.environ.get("PRIMER_URL")
    if url:
        yield url, os.environ.get("PRIMER_TOKEN", "")
        return
    go = shutil.which("go")
    if go is None:
        pytest.skip("no PRIMER_URL and no go to build primer: run `make run` and set PRIMER_URL and PRIMER_TOKEN, or install Go")
    tmp = Path(tempfile.mkdtemp(prefix="primer-sdk-"))
    bin = tmp / "primer"
    subprocess.run([go, "build", "-o", str(bin), "./cmd/primer"], cwd=REPO, check=True)
    env = dict(os.environ, CGO_ENABLED="0")
    subprocess.run([go, "build", "-o", str(tmp / "primer-runtime"), "./cmd/primer-runtime"], cwd=REPO, check=True, env=env)
    port = _free_port()
    env = dict(os.environ, PRIMER_ADDR=f"127.0.0.1:{port}", PRIMER_DATA_DIR=str(tmp / "data"),
               PRIMER_TEMPORAL_PORT=str(_free_port()), PRIMER_TEMPORAL_UI_PORT="-1", PRIMER_PROBE_INTERVAL="1s",
               PRIMER_OUTBOUND_ALLOW="127.0.0.1")
    log = open(tmp / "serve.log", "wb")
    proc = subprocess.Popen([str(bin), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"primer serve did not become ready; see {tmp / 'serve.log'}")
            time.sleep(0.2)
        yield url, (tmp / "data" / "admin.key").read_text().strip()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def client(server: "tuple[str, str]") -> Iterator[primer.Client]:
    url, key = server
    with primer.Client(url, key) as c:
        yield c


@pytest.fixture
def ws(client: primer.Client) -> Iterator[primer.Workspace]:
    """A running workspace of the default (local) template, deleted after."""
    with client.workspaces.create("default", labels={"test": "pytest"}) as w:
        yield w


@pytest.fixture(scope="session")
def docker_template(client: primer.Client) -> str:
    """A Docker template (python image), made once per session."""
    sock = os.environ.get("PRIMER_SDK_DOCKER_SOCKET")
    image = os.environ.get("PRIMER_SDK_PYTHON_IMAGE")
    if not sock or not image:
        msg = ("Docker tests need PRIMER_SDK_DOCKER_SOCKET (e.g. /var/run/docker.sock) and PRIMER_SDK_PYTHON_IMAGE "
               "(primer/python:1.0, `make images`); e2e's TestSDKPython sets both")
        if os.environ.get("PRIMER_SDK_REQUIRE_DOCKER"):
            pytest.fail(msg)
        pytest.skip(msg)
    pid = "docker-sdk-" + uuid.uuid4().hex[:6]
    client.providers.create(pid, "container", {
        "kind": "container", "runtime": "docker",
        "connection": {"kind": "socket", "socket_path": sock},
        "reachability": {"kind": "host_port", "bind_host": "127.0.0.1"},
    })
    tid = "py-docker-" + uuid.uuid4().hex[:6]
    client.templates.create(tid, pid, {"kind": "container", "image": image, "cpu_cores": 1,
                                       "memory_bytes": 512 << 20, "network": {"egress": "deny_all"}})
    return tid


@pytest.fixture(scope="session")
def model() -> Iterator[FakeModel]:
    """A model stand-in speaking OpenAI's chat-completions format."""
    m = FakeModel()
    m.start()
    yield m
    m.stop()


def uid(prefix: str) -> str:
    """A fresh id for a resource a test creates."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
