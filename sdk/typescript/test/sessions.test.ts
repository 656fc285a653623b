// Sessions: tool calls recorded as commits, history, diff and restore;
// an agent run (against a model stand-in speaking the OpenAI wire format)
// whose transcript streams as it is written.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FailedPreconditionError, NotFoundError, type TranscriptEntry } from "@primer/sdk";
import { admin, unique } from "./env.js";

const p = admin();

test("session tools, history, diff and restore", async () => {
  await using ws = await p.workspaces.create("default");
  await using ses = await ws.session({ agent: "ts-sdk", metadata: { run: "1" } });
  assert.equal(ses.data.workspace_id, ws.id);
  assert.equal(ses.data.status, "open");
  const w = await ses.write("notes.txt", "first\n");
  assert.match(w.commit, /^[0-9a-f]{40}$/);
  const x = await ses.exec("echo second >> notes.txt && cat notes.txt");
  assert.equal(x.stdout, "first\nsecond\n");
  const argv = await ses.exec(["sh", "-c", "exit 4"]);
  assert.equal(argv.exit_code, 4);
  const r = await ses.read("notes.txt");
  assert.deepEqual([r.content, r.encoding], ["first\nsecond\n", "utf-8"]);
  const bin = await ses.write("blob.bin", new Uint8Array([0, 255, 1]));
  assert.equal(bin.size, 3);
  assert.equal((await ses.read("blob.bin")).encoding, "base64");

  const h = await ses.history();
  assert.ok(h.items.length >= 4 && h.items.at(-1)!.commit === w.commit, `history: ${h.items.map((e) => e.tool)}`);
  const d = await ses.diff({ commit: x.commit });
  assert.deepEqual(d.files, [{ path: "notes.txt", change: "modified" }]);
  assert.match(d.patch, /\+second/);

  const restored = await ses.restore(w.commit);
  assert.equal(restored.restored_from, w.commit);
  assert.equal(await ws.files.readText("notes.txt"), "first\n");
  assert.ok(restored.changed.some((c) => c.path === "blob.bin" && c.change === "deleted"));

  await assert.rejects(ses.tool("workspace__delete", {}), NotFoundError);
  const ended = await ses.end("done by test");
  assert.deepEqual([ended.status, ended.end_reason], ["ended", "done by test"]);
  await assert.rejects(ses.exec("true"), FailedPreconditionError);
  assert.ok((await p.sessions.list({ workspace_id: ws.id })).some((s) => s.id === ses.id));
});

test("agent run: the transcript streams until the run ends", async () => {
  const model = process.env.PRIMER_TEST_MODEL_URL;
  assert.ok(model, "PRIMER_TEST_MODEL_URL names the model stand-in (go test ./e2e -run TestTypeScriptSDK starts one)");
  const llm = unique("ts-model");
  const agent = unique("ts-agent");
  await p.llmProviders.create({ id: llm, kind: "openai", base_url: model, api_key: "sk-ts-sdk-test" });
  assert.equal((await p.llmProviders.get(llm)).api_key, "(redacted)");
  await p.agents.create({ id: agent, model: { provider_id: llm, model_name: "test-model-1" }, system_prompt: ["Run code."], max_turns: 5, timeout: "2m" });
  try {
    await using ws = await p.workspaces.create("default");
    await using ses = await p.sessions.create({ workspace_id: ws.id, agent });
    const run = await ses.run(agent, "Run print(6 * 7) and tell me what it printed.");
    assert.equal(run.status, "running");
    const entries: TranscriptEntry[] = [];
    const it = ses.followTranscript();
    let ended;
    for (;;) {
      const n = await it.next();
      if (n.done) {
        ended = n.value;
        break;
      }
      entries.push(n.value);
    }
    assert.equal(ended.status, "ended");
    assert.equal(ended.end_reason, "completed");
    assert.ok(entries.every((e, i) => i === 0 || e.seq > entries[i - 1]!.seq), `every entry once, in order: ${entries.map((e) => e.seq)}`);
    assert.ok(entries.some((e) => e.role === "tool" && e.tool_name === "workspace__exec"), `roles: ${entries.map((e) => `${e.role}:${e.tool_name ?? ""}`)}`);
    assert.equal(entries.at(-1)!.content, "The snippet printed 42.");
    assert.equal((await ws.files.readText("out.txt")).trim(), "42");
    const tr = await ses.transcript();
    assert.equal(tr.items.length, entries.length);
    assert.ok(tr.usage.input_tokens > 0);
    // Resuming after an entry yields only what follows it.
    const rest: number[] = [];
    const again = ses.followTranscript({ after: entries[1]!.seq });
    for await (const e of again) rest.push(e.seq);
    assert.deepEqual(rest, entries.slice(2).map((e) => e.seq));
  } finally {
    await p.agents.delete(agent, { missingOk: true });
    await p.llmProviders.delete(llm, { missingOk: true });
  }
});
