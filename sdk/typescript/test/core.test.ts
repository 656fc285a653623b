// The client's own behaviour, against the real server where it can and a
// scripted fetch where the server cannot be made to misbehave: typed
// errors, retries with backoff of idempotent calls only, timeouts, abort,
// and primectl's ways of finding the server and key.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CanceledError, ForbiddenError, QuotaExceededError, InvalidError, NotFoundError, Primer, PrimerError, TimeoutError, UnauthenticatedError, UnavailableError, resolve } from "@primer/sdk";
import { admin, adminKey, url } from "./env.js";

test("errors carry the API's kind, message, status and field", async () => {
  const p = admin();
  await assert.rejects(p.templates.get("no-such-template"), (e: unknown) => e instanceof NotFoundError && e.kind === "not_found" && e.status === 404 && /no-such-template/.test(e.message));
  await assert.rejects(p.pools.create({ id: "Bad Id!", template_id: "default" }), (e: unknown) => e instanceof InvalidError && e.status === 400 && e.field === "id");
  const anon = new Primer({ url, token: "pmr.key-0000000000000000." + "0".repeat(64) });
  await assert.rejects(anon.workspaces.list(), (e: unknown) => e instanceof UnauthenticatedError && e.status === 401 && !e.message.includes("0".repeat(64)));
  const key = await p.apiKeys.create({ role: "viewer", name: "ts-sdk viewer" });
  const viewer = new Primer({ url, token: key.key });
  assert.ok((await viewer.templates.list()).length > 0);
  await assert.rejects(viewer.workspaces.create("default"), (e: unknown) => e instanceof ForbiddenError && e.status === 403);
  await p.apiKeys.revoke(key.id);
  assert.ok(new NotFoundError("not_found", "x", 404) instanceof PrimerError);
});

/** scripted is a fetch that answers from a list and counts its calls. */
function scripted(answers: (() => Promise<Response>)[]) {
  const calls: { method: string; url: string }[] = [];
  const f = (input: string, init?: RequestInit) => {
    calls.push({ method: init?.method ?? "GET", url: input });
    const a = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    return a();
  };
  return { f, calls };
}

const envelope = (status: number, code: string) => async () => new Response(JSON.stringify({ error: { code, message: `${code} now`, details: {} } }), { status, headers: { "Content-Type": "application/json" } });
const ok = (body: unknown) => async () => new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
const refused = () => Promise.reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }));

test("idempotent calls are retried with backoff; others are not", async () => {
  const s = scripted([envelope(503, "unavailable"), refused, ok({ id: "t", provider_id: "local" })]);
  const p = new Primer({ url: "http://primer.invalid", fetch: s.f, retry: { baseDelayMs: 1 } });
  assert.equal((await p.templates.get("t")).id, "t");
  assert.equal(s.calls.length, 3);

  const post = scripted([envelope(503, "unavailable"), ok({})]);
  const p2 = new Primer({ url: "http://primer.invalid", fetch: post.f, retry: { baseDelayMs: 1 } });
  await assert.rejects(p2.workspaces.create("default", { wait: false }), UnavailableError);
  assert.equal(post.calls.length, 1, "a create is not repeated");

  const bad = scripted([envelope(404, "not_found")]);
  const p3 = new Primer({ url: "http://primer.invalid", fetch: bad.f, retry: { baseDelayMs: 1 } });
  await assert.rejects(p3.templates.get("t"), NotFoundError);
  assert.equal(bad.calls.length, 1, "a 404 is not retried");

  const down = scripted([refused]);
  const p4 = new Primer({ url: "http://primer.invalid", fetch: down.f, retry: { attempts: 4, baseDelayMs: 1 } });
  await assert.rejects(p4.templates.list(), (e: unknown) => e instanceof UnavailableError && e.status === 0 && /ECONNREFUSED/.test(e.message));
  assert.equal(down.calls.length, 4);
});

test("a call past its timeout is a TimeoutError; an aborted one a CanceledError", async () => {
  const hang = (_: string, init?: RequestInit) => new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
  const p = new Primer({ url: "http://primer.invalid", fetch: hang, timeoutMs: 50, retry: { attempts: 1 } });
  const t0 = Date.now();
  await assert.rejects(p.templates.list(), TimeoutError);
  assert.ok(Date.now() - t0 < 5000);
  await assert.rejects(p.templates.list({ timeoutMs: 20 }), TimeoutError);
  const ctl = new AbortController();
  const pending = p.templates.list({ signal: ctl.signal, timeoutMs: 0 });
  ctl.abort();
  await assert.rejects(pending, CanceledError);
  await assert.rejects(p.templates.list({ signal: AbortSignal.abort() }), CanceledError);
});

test("ids and paths that a URL parser would rewrite are refused before sending", async () => {
  const s = scripted([ok({})]);
  const p = new Primer({ url: "http://primer.invalid", fetch: s.f });
  await assert.rejects(p.workspaces.get(".."), InvalidError);
  const ws = p.workspaces.handle("ws-1");
  await assert.rejects(ws.files.readText("../ws-2/files/secret"), (e: unknown) => e instanceof InvalidError && e.field === "path");
  assert.equal(s.calls.length, 0);
  await ws.files.stat("/etc/hostname").catch(() => {});
  assert.equal(s.calls[0]!.url, "http://primer.invalid/v1/workspaces/ws-1/files//etc/hostname?stat=true");
});

test("connect finds the server and key as primectl does", async () => {
  const dir = mkdtempSync(join(tmpdir(), "primer-sdk-cfg-"));
  const saved = { ...process.env };
  try {
    for (const k of ["PRIMER_URL", "PRIMER_TOKEN", "PRIMER_CONFIG", "PRIMER_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"]) delete process.env[k];
    process.env.HOME = dir;
    process.env.XDG_DATA_HOME = join(dir, "nodata");
    // The config file.
    const cfg = join(dir, "config.yaml");
    writeFileSync(cfg, `# primectl's config\nurl: ${url}\ntoken: "${adminKey}"\n`, { mode: 0o600 });
    process.env.PRIMER_CONFIG = cfg;
    let s = await resolve();
    assert.deepEqual([s.url, s.token, s.tokenSource], [url, adminKey, "config"]);
    const p = await Primer.connect();
    assert.ok((await p.templates.list()).some((t) => t.id === "default"));
    // The environment wins over the file, options over both.
    process.env.PRIMER_TOKEN = "from-env";
    s = await resolve();
    assert.deepEqual([s.token, s.tokenSource], ["from-env", "env"]);
    s = await resolve({ token: "given" });
    assert.deepEqual([s.token, s.tokenSource], ["given", "option"]);
    // A local server's admin key, on loopback only.
    delete process.env.PRIMER_TOKEN;
    delete process.env.PRIMER_CONFIG;
    process.env.PRIMER_DATA_DIR = dir;
    writeFileSync(join(dir, "admin.key"), "pmr.key-local.secret\n", { mode: 0o600 });
    s = await resolve({ url: "http://127.0.0.1:8080" });
    assert.deepEqual([s.token, s.tokenSource], ["pmr.key-local.secret", "admin.key"]);
    s = await resolve({ url: "https://primer.example.com" });
    assert.deepEqual([s.token, s.tokenSource], [undefined, "none"], "a key found on disk is never sent to another machine");
  } finally {
    process.env = saved;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a refusal past the key's stream cap is a QuotaExceededError with Retry-After", async () => {
  const p = admin();
  const key = await p.apiKeys.create({ role: "viewer", name: "ts-sdk streams" });
  const viewer = new Primer({ url, token: key.key, retry: { attempts: 1 } });
  const ctl = new AbortController();
  const open: Promise<unknown>[] = [];
  try {
    const { latest_id } = await p.events.list({ limit: 1 });
    let refused: unknown;
    for (let i = 0; i < 64 && refused === undefined; i++) {
      const it = viewer.events.follow({ after: latest_id + 1_000_000, signal: ctl.signal });
      // The first next() opens the stream; it then waits for an event that never comes.
      const first = it.next();
      const outcome = await Promise.race([first.then(() => "event", (e: unknown) => e), new Promise((r) => setTimeout(() => r("open"), 300))]);
      if (outcome === "open") open.push(first.catch(() => {}));
      else refused = outcome;
    }
    assert.ok(refused instanceof QuotaExceededError, `refused with ${refused}`);
    assert.equal(refused.status, 429);
    assert.ok(refused.retryAfter !== undefined && refused.retryAfter > 0);
    assert.match(refused.message, /stream/);
  } finally {
    ctl.abort();
    await Promise.all(open);
    await p.apiKeys.revoke(key.id);
  }
});
