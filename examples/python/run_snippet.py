"""Run a Python snippet in a fresh sandbox and stream what it prints.

    PRIMER_URL=... PRIMER_TOKEN=... python3 run_snippet.py [TEMPLATE]

The workspace is deleted when the block ends, even if the snippet fails.
"""

import sys

import primer

SNIPPET = """
import platform, time
for i in range(3):
    print(f"step {i} on {platform.system()}", flush=True)
    time.sleep(0.1)
print(sum(x * x for x in range(10)))
"""

template = sys.argv[1] if len(sys.argv) > 1 else "default"
with primer.Client() as client:
    with client.workspaces.create(template, labels={"example": "run_snippet"}) as ws:
        print(f"workspace {ws.id} ({ws.backend}, {ws.source})")
        ws.files.write("snippet.py", SNIPPET)
        stream = ws.exec_stream(["python3", "snippet.py"], timeout="1m")
        for chunk in stream:
            print(f"[{chunk.stream}] {chunk.data}", end="")
        result = stream.result
        print(f"exit code {result.exit_code} in {result.duration_ms} ms")
        sys.exit(result.exit_code)
