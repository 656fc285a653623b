// Snapshots, fork, pause and resume on a local and a Docker template: a
// capture new workspaces start from, children that do not see each
// other's writes, and a pause that keeps the files.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FailedPreconditionError, InvalidError, NotFoundError, type Workspace } from "@primer/sdk";
import { admin, templates } from "./env.js";

const p = admin();

for (const [name, template] of templates) {
  test(`snapshot, fork, pause on ${name}`, async () => {
    await using ws = await p.workspaces.create({ template_id: template, labels: { suite: "ts-sdk" } });
    await ws.files.write("state.txt", "prepared");

    const snap = await ws.snapshot({ labels: { step: "1" } });
    assert.equal(snap.phase, "ready");
    assert.equal(snap.workspace_id, ws.id);
    assert.deepEqual(snap.labels, { step: "1" });
    assert.ok((await p.snapshots.list({ workspace_id: ws.id })).some((s) => s.id === snap.id));
    await ws.files.write("state.txt", "changed");
    {
      await using child = await p.workspaces.create({ snapshot_id: snap.id });
      assert.equal(child.data.snapshot_id, snap.id);
      assert.equal(await child.files.readText("state.txt"), "prepared");
    }

    const forked = await ws.fork({ count: 2, labels: { fork: "yes" } });
    try {
      assert.equal(forked.snapshot.implicit, true);
      assert.equal(forked.workspaces.length, 2);
      const [a, b] = forked.workspaces as [Workspace, Workspace];
      assert.equal(a.phase, "running");
      assert.equal(b.phase, "running");
      assert.equal(await a.files.readText("state.txt"), "changed");
      await a.files.write("mine.txt", "a");
      await assert.rejects(b.files.stat("mine.txt"), (e: unknown) => e instanceof NotFoundError);
      await assert.rejects(ws.files.stat("mine.txt"), (e: unknown) => e instanceof NotFoundError);
    } finally {
      await Promise.all(forked.workspaces.map((w) => w.delete({ wait: true })));
    }
    await assert.rejects(ws.fork(0), (e: unknown) => e instanceof InvalidError && e.field === "count");

    const paused = await ws.pause();
    assert.equal(paused.phase, "paused");
    await assert.rejects(ws.exec("true"), (e: unknown) => e instanceof FailedPreconditionError);
    const running = await ws.resume();
    assert.equal(running.phase, "running");
    assert.equal(await ws.files.readText("state.txt"), "changed");

    const deleting = await p.snapshots.delete(snap.id);
    assert.equal(deleting.phase, "deleting");
    await assert.rejects(p.snapshots.get("snap-0000000000000000"), (e: unknown) => e instanceof NotFoundError);
  });
}
