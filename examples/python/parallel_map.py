"""A parallel map over 100 inputs on a warm pool of sandboxes.

    PRIMER_URL=... PRIMER_TOKEN=... python3 parallel_map.py [TEMPLATE] [POOL_SIZE]

Each worker leases one warm workspace from the pool (no provisioning
wait) and takes inputs from a shared queue until none is left; `with
pool.lease()` gives the workspace back to the pool (reset, warm again) when
the worker is done, even if an input failed.
"""

import queue
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

import primer

template = sys.argv[1] if len(sys.argv) > 1 else "default"
size = int(sys.argv[2]) if len(sys.argv) > 2 else 4
inputs = list(range(100))


def square_in_sandbox(ws: primer.Workspace, x: int) -> int:
    r = ws.exec(["python3", "-c", f"print({x} ** 2)"], check=True)
    return int(r.stdout)


def worker(pool: primer.Pool, todo: "queue.Queue[int]", out: Dict[int, int]) -> int:
    done = 0
    with pool.lease() as ws:
        while True:
            try:
                x = todo.get_nowait()
            except queue.Empty:
                return done
            out[x] = square_in_sandbox(ws, x)
            done += 1


with primer.Client() as client:
    start = time.monotonic()
    with client.pools.create(f"map-{uuid.uuid4().hex[:8]}", template, size=size) as pool:
        pool.wait_ready()
        print(f"pool {pool.id}: {size} warm workspaces in {time.monotonic() - start:.1f}s")
        todo: "queue.Queue[int]" = queue.Queue()
        for x in inputs:
            todo.put(x)
        results: Dict[int, int] = {}
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=size) as ex:
            per_worker = list(ex.map(lambda _: worker(pool, todo, results), range(size)))
        print(f"mapped {len(results)} inputs in {time.monotonic() - start:.1f}s on {size} workspaces {per_worker}")
    squares = [results[x] for x in inputs]
    assert squares == [x * x for x in inputs], squares
    print(f"sum of squares: {sum(squares)}")
