// Workspaces on a local and a Docker template: create and wait, exec whole
// and streamed with stdin, files streamed both ways, background processes,
// events followed and resumed, lifetimes, and deletes that happen however
// the code using the workspace ends.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Primer, waitGone, ConflictError, FailedPreconditionError, InvalidError, NotFoundError, type Workspace } from "@primer/sdk";
import { downloadFile, uploadFile } from "@primer/sdk/node";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { admin, templates, unique } from "./env.js";

const p = admin();

/** gone says whether workspace id is destroyed within a minute (a delete was asked for). */
async function gone(id: string): Promise<boolean> {
  try {
    await waitGone(p.transport, id, { waitTimeoutMs: 60_000 });
    return true;
  } catch {
    return false;
  }
}

for (const [name, template] of templates) {
  test(`workspace on ${name}`, async (t) => {
    await using ws = await p.workspaces.create({ template_id: template, labels: { suite: "ts-sdk" } });
    assert.equal(ws.phase, "running");
    assert.match(ws.id, /^ws-[0-9a-f]+$/);

    await t.test("exec", async () => {
      const r = await ws.exec(["sh", "-c", "echo out; echo err >&2; exit 3"]);
      assert.deepEqual([r.exit_code, r.stdout, r.stderr], [3, "out\n", "err\n"]);
      const s = await ws.exec("cat; echo; echo $GREETING", { stdin: "piped in", env: { GREETING: "hello" } });
      assert.equal(s.stdout, "piped in\nhello\n");
      const to = await ws.exec(["sleep", "5"], { timeout: "200ms" });
      assert.equal(to.timed_out, true);
      await assert.rejects(ws.exec([]), (e: unknown) => e instanceof InvalidError && e.field === "command" && e.status === 400);
    });

    await t.test("exec streamed", async () => {
      const stream = ws.execStream("for i in 1 2 3; do echo line $i; sleep 0.05; done; echo oops >&2; exit 2");
      const chunks: string[] = [];
      let stderr = "";
      for await (const c of stream) {
        if (c.stream === "stdout") chunks.push(c.data);
        else stderr += c.data;
      }
      assert.equal(chunks.join(""), "line 1\nline 2\nline 3\n");
      assert.ok(chunks.length >= 2, `output arrived in ${chunks.length} chunk(s), want it as it was written`);
      assert.equal(stderr, "oops\n");
      assert.equal((await stream.exit).exit_code, 2);
      const collected = await ws.execStream(["cat"], { stdin: new TextEncoder().encode("bytes in") }).collect();
      assert.equal(collected.stdout, "bytes in");
    });

    await t.test("exec stream canceled by its signal", async () => {
      const ctl = new AbortController();
      const stream = ws.execStream("echo started; sleep 30; echo never", { signal: ctl.signal });
      const seen: string[] = [];
      const started = Date.now();
      await assert.rejects(async () => {
        for await (const c of stream) {
          seen.push(c.data);
          ctl.abort();
        }
      }, (e: unknown) => (e as { kind?: string }).kind === "canceled");
      assert.deepEqual(seen, ["started\n"]);
      assert.ok(Date.now() - started < 10_000, "the abort ended the stream at once");
      await assert.rejects(stream.exit);
    });

    await t.test("files", async () => {
      const big = new Uint8Array(3 << 20).map((_, i) => (i * 7) & 0xff);
      async function* chunks() {
        for (let off = 0; off < big.length; off += 1 << 20) yield big.subarray(off, off + (1 << 20));
      }
      const info = await ws.files.write("data/big.bin", chunks(), { mode: 0o600 });
      assert.equal(info.size, big.length);
      assert.equal(info.mode, 0o600);
      const dl = await ws.files.read("data/big.bin");
      assert.equal(dl.size, big.length);
      assert.equal(dl.mode, 0o600);
      let n = 0;
      let same = true;
      for await (const part of dl.body as unknown as AsyncIterable<Uint8Array>) {
        for (let i = 0; i < part.length; i++) if (part[i] !== big[n + i]) same = false;
        n += part.length;
      }
      assert.equal(n, big.length);
      assert.ok(same, "downloaded bytes differ from the upload");
      await ws.files.write("data/hello.txt", "hi there\n");
      assert.equal(await ws.files.readText("data/hello.txt"), "hi there\n");
      assert.deepEqual((await ws.files.list("data")).map((f) => f.name).sort(), ["big.bin", "hello.txt"]);
      assert.equal((await ws.files.stat("data")).is_dir, true);
      await ws.files.mkdir("empty/deeper");
      assert.equal(await ws.files.exists("empty/deeper"), true);
      await assert.rejects(ws.files.remove("data"), ConflictError);
      await ws.files.remove("data", { recursive: true });
      assert.equal(await ws.files.exists("data/hello.txt"), false);
      await assert.rejects(ws.files.readText("data/hello.txt"), NotFoundError);
      await assert.rejects(ws.files.readText("../outside"), InvalidError);
    });

    await t.test("files to and from local paths (@primer/sdk/node)", async () => {
      const dir = mkdtempSync(join(tmpdir(), "primer-sdk-files-"));
      try {
        const data = new Uint8Array(5 << 20).map((_, i) => (i * 31) & 0xff);
        writeFileSync(join(dir, "up.bin"), data, { mode: 0o640 });
        const info = await uploadFile(ws.files, join(dir, "up.bin"), "paths/up.bin");
        assert.deepEqual([info.size, info.mode], [data.length, 0o640]);
        assert.equal(await downloadFile(ws.files, "paths/up.bin", join(dir, "down.bin")), data.length);
        assert.ok(Buffer.from(readFileSync(join(dir, "down.bin"))).equals(Buffer.from(data)));
        assert.equal(statSync(join(dir, "down.bin")).mode & 0o777, 0o640);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    await t.test("background processes", async () => {
      const proc = await ws.processes.start(["sh", "-c", "read line; echo got $line > proc.txt"], { stdin_open: true, tag: "reader" });
      assert.equal(proc.running, true);
      assert.ok((await ws.processes.list()).some((x) => x.pid === proc.pid && x.tag === "reader"));
      await ws.processes.input(proc.pid, "ping\n");
      const exit = await ws.processes.wait(proc.pid);
      assert.equal(exit.exit_code, 0);
      assert.equal(await ws.files.readText("proc.txt"), "got ping\n");
      const sleeper = await ws.processes.start("sleep 60");
      await ws.processes.signal(sleeper.pid, "TERM");
      const ended = await ws.processes.wait(sleeper.pid);
      assert.notEqual(ended.exit_code, 0);
      await assert.rejects(ws.processes.input(sleeper.pid, "x"), FailedPreconditionError);
    });

    await t.test("attach streams a process's output until its exit", async () => {
      assert.equal(typeof WebSocket, "function", "node has a WebSocket (e2e's TestTypeScriptSDK runs Node 20 with --experimental-websocket)");
      const proc = await ws.processes.start(["sh", "-c", "for i in 1 2 3; do echo out $i; sleep 0.1; done; echo bye >&2; exit 5"]);
      const it = ws.processes.attach(proc.pid, { replay: true });
      const dec = new TextDecoder();
      let stdout = "";
      let stderr = "";
      for (;;) {
        const n = await it.next();
        if (n.done) {
          assert.equal(n.value.exit_code, 5);
          break;
        }
        if (n.value.stream === "stderr") stderr += dec.decode(n.value.data);
        else stdout += dec.decode(n.value.data);
      }
      assert.equal(stdout, "out 1\nout 2\nout 3\n");
      assert.equal(stderr, "bye\n");

      // Both ways: input over the socket, output back, EOF ends it.
      const cat = await ws.processes.start(["cat"], { stdin_open: true });
      const a = await ws.processes.open(cat.pid);
      a.input("echo me\n");
      let echoed = "";
      for await (const out of a) {
        echoed += dec.decode(out.data);
        if (echoed === "echo me\n") a.closeStdin();
      }
      assert.equal(echoed, "echo me\n");
      assert.equal((await a.exit).exit_code, 0);
      assert.throws(() => a.input("late"), (e: unknown) => (e as { kind?: string }).kind === "failed_precondition");
    });
  });
}

test("events: stored, followed to the end, resumed after an id", async () => {
  const ws = await p.workspaces.create({ template_id: "default" });
  const stored = await ws.events();
  assert.ok(stored.some((e) => e.type === "workspace.provisioned"), `events: ${stored.map((e) => e.type)}`);
  const first = stored[0]!;
  const follow = (async () => {
    const types: string[] = [];
    for await (const e of ws.followEvents({ after: first.id })) types.push(e.type);
    return types;
  })();
  await ws.delete();
  const types = await follow;
  assert.ok(!types.includes(first.type) || stored.filter((e) => e.type === first.type).length > 1, "resumed after the first event, not before");
  assert.equal(types.at(-1), "workspace.destroyed");
  const tenant = await p.events.list({ after: first.id - 1 });
  assert.ok(tenant.items.some((e) => e.workspace_id === ws.id && e.type === "workspace.destroyed"));
  assert.ok(tenant.latest_id >= first.id);
});

test("tenant events follow: new events as they happen, stopped by the signal", async () => {
  const { latest_id } = await p.events.list({ limit: 1 });
  const ctl = new AbortController();
  const got: string[] = [];
  let wsId = "";
  const follow = (async () => {
    try {
      for await (const e of p.events.follow({ after: latest_id, signal: ctl.signal })) {
        if (e.workspace_id === wsId && e.type === "workspace.provisioned") {
          got.push(e.type);
          ctl.abort();
        }
      }
    } catch (e) {
      if ((e as { kind?: string }).kind !== "canceled") throw e;
    }
  })();
  const ws = await p.workspaces.create({ template_id: "default" }, { wait: false });
  wsId = ws.id;
  await follow;
  assert.deepEqual(got, ["workspace.provisioned"]);
  await ws.delete();
});

test("lifetimes: ttl and extend", async () => {
  const id = unique("ts-life");
  await p.templates.create({ id, provider_id: "local", backend: { kind: "local", lifetime: { max: "1h" } } });
  try {
    await using ws = await p.workspaces.create({ template_id: id, ttl: "10m" });
    const before = Date.parse(ws.data.expires_at!);
    assert.ok(before > Date.now() + 9 * 60_000 && before < Date.now() + 11 * 60_000, `expires_at ${ws.data.expires_at}`);
    const after = await ws.extend({ by: "5m" });
    assert.ok(Date.parse(after.expires_at!) >= before + 5 * 60_000 - 1000, `extended to ${after.expires_at}`);
    await assert.rejects(ws.extend("2h"), (e: unknown) => e instanceof InvalidError && e.field === "by");
    await assert.rejects(p.workspaces.create({ template_id: id, ttl: "2h" }), (e: unknown) => e instanceof InvalidError && e.field === "ttl");
  } finally {
    await waitNoWorkspaces(id);
    await p.templates.delete(id);
  }
});

async function waitNoWorkspaces(template: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await p.workspaces.list({ template_id: template })).length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("with/await using delete the workspace however the body ends", async () => {
  let id = "";
  await assert.rejects(p.workspaces.with("default", async (ws) => {
    id = ws.id;
    throw new Error("body failed");
  }), /body failed/);
  assert.ok(await gone(id), `workspace ${id} left behind after the body threw`);

  let id2 = "";
  await assert.rejects((async () => {
    await using ws: Workspace = await p.workspaces.create("default");
    id2 = ws.id;
    throw new Error("thrown inside await using");
  })(), /thrown inside await using/);
  assert.ok(await gone(id2), `workspace ${id2} left behind by await using`);
});

test("create that never runs is deleted and reported", async () => {
  await assert.rejects(p.workspaces.create({ template_id: "no-such-template" }), (e: unknown) => e instanceof NotFoundError && e.field === "template_id");
});

test("a stream that drops mid-way resumes after the last event it saw (Last-Event-ID)", async () => {
  // A fetch that breaks the first event stream after its first event, as
  // a proxy or a network would, and records each stream's Last-Event-ID.
  const resumedFrom: (string | null)[] = [];
  let cut = false;
  const cutting = async (input: string, init?: RequestInit): Promise<Response> => {
    const resp = await fetch(input, init);
    const h = new Headers(init?.headers);
    if (h.get("Accept") !== "text/event-stream") return resp;
    resumedFrom.push(h.get("Last-Event-ID"));
    if (cut || !resp.body) return resp;
    cut = true;
    const reader = resp.body.getReader();
    let buf = "";
    const dec = new TextDecoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        const { value, done } = await reader.read();
        if (done) return ctl.close();
        buf += dec.decode(value, { stream: true });
        const end = buf.indexOf("\n\n");
        if (end < 0) return ctl.enqueue(value);
        // Pass the first whole event, then break the connection.
        ctl.enqueue(new TextEncoder().encode(buf.slice(0, end + 2)));
        await reader.cancel();
        ctl.error(new TypeError("terminated"));
      },
    });
    return new Response(body, { status: resp.status, headers: resp.headers });
  };
  const c = new Primer({ url: p.url, token: p.transport.token, fetch: cutting });
  const ws = await p.workspaces.create("default");
  const stored = await ws.events();
  await ws.delete();
  const seen: number[] = [];
  for await (const e of c.workspaces.handle(ws.id).followEvents({ reconnectDelayMs: 10 })) seen.push(e.id);
  assert.equal(resumedFrom.length >= 2, true, `streams opened: ${resumedFrom}`);
  assert.equal(resumedFrom[0], null);
  assert.equal(resumedFrom[1], String(stored[0]!.id), "the second stream resumed after the first event");
  assert.deepEqual(seen, [...new Set(seen)], "no event twice");
  assert.deepEqual(seen.slice(0, stored.length), stored.map((e) => e.id), "nothing lost");
});
