// Administration: tenants, keys (a member's reach ends at its tenant) and
// the audit log that records what they did.

import { test } from "node:test";
import assert from "node:assert/strict";
import { ConflictError, ForbiddenError, NotFoundError, Primer, UnauthenticatedError } from "@primer/sdk";
import { admin, unique, url } from "./env.js";

const p = admin();

test("tenants, keys and audit", async () => {
  const tenant = unique("ts-tenant");
  const created = await p.tenants.create({ id: tenant, description: "from the TypeScript SDK", quota: { max_workspaces: 2 } });
  assert.equal(created.quota.max_workspaces, 2);
  await assert.rejects(p.tenants.create({ id: tenant }), ConflictError);
  const got = await p.tenants.get(tenant);
  assert.deepEqual(got.usage, { workspaces: 0, cpu_cores: 0, memory_bytes: 0, pools: 0, snapshot_bytes: 0, paused: 0 });
  const upd = await p.tenants.update(tenant, { description: "changed", quota: { max_workspaces: 3 } });
  assert.equal(upd.description, "changed");

  const key = await p.apiKeys.create({ tenant_id: tenant, role: "member", name: "ts member" });
  assert.match(key.key, /^pmr\./);
  const member = new Primer({ url, token: key.key });
  assert.deepEqual((await member.tenants.list()).map((t) => t.id), [tenant]);
  await assert.rejects(member.tenants.create({ id: unique("ts-other") }), ForbiddenError);
  await assert.rejects(member.templates.get("default"), (e: unknown) => e instanceof NotFoundError || e instanceof ForbiddenError);
  const child = await member.apiKeys.create({ role: "viewer", name: "ts child" });
  assert.equal(child.parent_id, key.id);
  assert.ok((await p.apiKeys.list({ tenant })).some((k) => k.id === child.id));
  assert.ok((await p.apiKeys.list({ tenant, tree: true })).some((k) => k.id === child.id && k.depth === 1));

  const revoked = await p.apiKeys.revoke(key.id);
  assert.ok(revoked.revoked_at);
  assert.equal(revoked.revoked_below, 1);
  await assert.rejects(member.tenants.list(), UnauthenticatedError);
  await assert.rejects(new Primer({ url, token: child.key }).tenants.list(), UnauthenticatedError, "revoking a key revokes its subtree");

  const entries = await p.audit.list({ tenant, limit: 50 });
  assert.ok(entries.some((e) => e.action === "apikeys.create" && e.result === "ok"), `audit: ${entries.map((e) => e.action)}`);
  assert.ok(entries.some((e) => e.action === "tenants.create" && e.result === "forbidden"));
  await p.tenants.delete(tenant);
  await assert.rejects(p.tenants.get(tenant), NotFoundError);
});
