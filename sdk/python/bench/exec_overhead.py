"""What the sync SDK adds to a call: exec `true` in one running workspace
through ``primer.Client`` and through raw HTTP (an ``httpx.Client`` posting
the same body and decoding the answer, its connections with TCP_NODELAY as
the SDK's), in alternating rounds so drift falls on both alike; and, for
scale, a few calls of a plain ``httpx.Client`` (Nagle on: each request's
body waits for the server's delayed ACK of its headers). Prints one JSON
line: the samples of each side in microseconds.

    python3 exec_overhead.py WORKSPACE_ID [ROUNDS] [PER_ROUND]   (PRIMER_URL, PRIMER_TOKEN)
"""

import json
import os
import sys
import time

import httpx

import primer
from primer._core import _NoDelay, nodelay_transport


def main() -> None:
    ws_id = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    url, token = os.environ["PRIMER_URL"].rstrip("/"), os.environ["PRIMER_TOKEN"]

    client = primer.Client(url, token)
    ws = client.workspaces.handle(ws_id)
    headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
    raw = httpx.Client(timeout=None, headers=headers, transport=nodelay_transport(httpx.HTTPTransport, _NoDelay))
    plain = httpx.Client(timeout=None, headers=headers)
    exec_url = f"{url}/v1/workspaces/{ws_id}/exec"
    body = json.dumps({"command": ["true"]}).encode()

    def sdk() -> None:
        if ws.exec(["true"]).exit_code != 0:
            raise SystemExit("sdk: exit code")

    def rawcall() -> None:
        r = raw.post(exec_url, content=body, headers={"Content-Type": "application/json"})
        if r.status_code != 200 or json.loads(r.content)["exit_code"] != 0:
            raise SystemExit(f"raw: {r.status_code} {r.text[:200]}")

    def plaincall() -> None:
        r = plain.post(exec_url, content=body, headers={"Content-Type": "application/json"})
        if r.status_code != 200 or json.loads(r.content)["exit_code"] != 0:
            raise SystemExit(f"plain: {r.status_code} {r.text[:200]}")

    def timed(f, n):
        out = []
        for _ in range(n):
            t = time.perf_counter_ns()
            f()
            out.append((time.perf_counter_ns() - t) // 1000)
        return out

    timed(sdk, 100)
    timed(rawcall, 100)
    samples = {"sdk": [], "raw": []}
    for r in range(rounds):
        order = [("sdk", sdk), ("raw", rawcall)] if r % 2 == 0 else [("raw", rawcall), ("sdk", sdk)]
        for name, f in order:
            samples[name] += timed(f, per)
    samples["plain_httpx"] = timed(plaincall, 50)
    print(json.dumps(samples))


if __name__ == "__main__":
    main()
