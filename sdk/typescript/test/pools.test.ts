// Pools: create, lease as `await using` (returned on exit, even when the
// body throws), withLease and map, update and delete.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FailedPreconditionError, NotFoundError, type Lease } from "@primer/sdk";
import { admin, unique } from "./env.js";

const p = admin();

async function until(what: string, cond: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test("pools: lease, return on exit, map, update, delete", async () => {
  const id = unique("ts-pool");
  const pool = await p.pools.create({ id, template_id: "default", size: 2 });
  assert.equal(pool.size, 2);
  try {
    assert.equal((await p.pools.waitReady(id)).status.idle, 2);

    let leasedId = "";
    {
      await using lease: Lease = await p.pools.lease(id, { labels: { job: "ts" } });
      leasedId = lease.id;
      assert.equal(lease.source, "warm");
      assert.equal(lease.data.pool_state, "leased");
      assert.equal((await lease.exec("echo leased")).stdout, "leased\n");
      assert.equal((await p.pools.get(id)).status.leased, 1);
    }
    const back = await p.workspaces.get(leasedId);
    assert.ok(back.data.pool_state === "returning" || back.data.pool_state === "idle", `pool_state after the block: ${back.data.pool_state}`);
    await assert.rejects(back.return(), FailedPreconditionError, "returning twice is refused");

    await until("the member came back", async () => (await p.pools.get(id)).status.idle === 2);
    let inside = "";
    await assert.rejects(p.pools.withLease(id, async (ws) => {
      inside = ws.id;
      throw new Error("body failed");
    }), /body failed/);
    const after = await p.workspaces.get(inside);
    assert.notEqual(after.data.pool_state, "leased", "withLease gave the workspace back when the body threw");

    const squares = await p.pools.map(id, [1, 2, 3, 4, 5], async (ws, n) => Number((await ws.exec(["sh", "-c", `echo $((${n} * ${n}))`])).stdout.trim()));
    assert.deepEqual(squares, [1, 4, 9, 16, 25]);

    const updated = await p.pools.update(id, { template_id: "default", size: 1 });
    assert.equal(updated.size, 1);
    assert.ok((await p.pools.list()).some((x) => x.id === id));
  } finally {
    await p.pools.delete(id, { missingOk: true });
  }
  await assert.rejects(p.pools.get(id), NotFoundError);
});
