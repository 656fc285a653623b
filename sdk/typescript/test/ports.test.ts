// Ports and preview links on the local template: a dev server in the
// workspace is listed and opened through a link with no key until the
// link is revoked.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { admin, localTemplate } from "./env.js";

const p = admin();

/** freePort is a TCP port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (a && typeof a === "object" ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

test("ports and preview links on local", async () => {
  await using ws = await p.workspaces.create({ template_id: localTemplate, labels: { suite: "ts-sdk" } });
  await ws.files.write("index.html", "<h1>from the workspace</h1>");
  const port = await freePort();
  const proc = await ws.processes.start(["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"], { tag: "web" });
  try {
    const deadline = Date.now() + 30_000;
    while (!(await ws.ports()).some((lp) => lp.port === port)) {
      assert.ok(Date.now() < deadline, `port ${port} never listed`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const link = await ws.preview(port, { ttl: "10m" });
    assert.equal(link.port, port);
    assert.match(link.url, /\/preview\/pv-/);
    const page = await fetch(link.url + "index.html");
    assert.equal(page.status, 200);
    assert.equal(await page.text(), "<h1>from the workspace</h1>");
    assert.deepEqual((await ws.previews()).map((l) => l.id), [link.id]);
    const revoked = await ws.revokePreview(link.id);
    assert.ok(revoked.revoked_at);
    const gone = await fetch(link.url + "index.html");
    assert.equal(gone.status, 403);
    assert.match(await gone.text(), /revoked/);
  } finally {
    await ws.processes.signal(proc.pid, "KILL").catch(() => {});
  }
});
