// Providers and templates: create, get, list, update (a template's
// generation rises), delete, and the refusals the API documents.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError, ForbiddenError, InvalidError, NotFoundError } from "@primer/sdk";
import { admin, unique } from "./env.js";

const p = admin();

test("providers and templates", async () => {
  const root = mkdtempSync(join(tmpdir(), "primer-sdk-provider-"));
  const prov = unique("ts-prov");
  const tmpl = unique("ts-tmpl");
  try {
    const created = await p.providers.create({ id: prov, provider: "local", config: { root_path: root } });
    assert.equal(created.provider, "local");
    assert.ok((await p.providers.list()).some((x) => x.id === prov));
    await assert.rejects(p.providers.create({ id: prov, provider: "local", config: { root_path: root } }), ConflictError);
    await assert.rejects(p.providers.create({ id: unique("ts-bad"), provider: "nope" }), (e: unknown) => e instanceof InvalidError && e.field === "spec.provider");
    await assert.rejects(p.providers.update("local", { provider: "local", config: { root_path: root } }), ForbiddenError);

    const t1 = await p.templates.create({ id: tmpl, provider_id: prov, description: "first", backend: { kind: "local" } });
    assert.equal(t1.provider_id, prov);
    const t2 = await p.templates.update(tmpl, { provider_id: prov, description: "second", backend: { kind: "local" } });
    assert.equal(t2.description, "second");
    assert.equal(t2.generation, t1.generation + 1);
    assert.deepEqual((await p.templates.list({ provider_id: prov })).map((t) => t.id), [tmpl]);
    await assert.rejects(p.templates.create({ id: unique("ts-bad"), provider_id: prov, backend: { kind: "container" } }), (e: unknown) => e instanceof InvalidError && e.field === "spec.backend.kind");
    await assert.rejects(p.providers.delete(prov), ConflictError, "a provider a template uses is kept");

    const ws = await p.workspaces.create(tmpl);
    try {
      assert.equal((await ws.exec("pwd")).stdout.trim().startsWith(root), true);
    } finally {
      await ws.delete({ wait: true });
    }
  } finally {
    await p.templates.delete(tmpl, { missingOk: true });
  }
  await p.providers.delete(prov);
  await assert.rejects(p.providers.get(prov), NotFoundError);
  rmSync(root, { recursive: true, force: true });
});
