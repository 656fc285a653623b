// Each program of examples/typescript runs as a user runs it (node on its
// compiled file, the server and key in PRIMER_URL and PRIMER_TOKEN), and
// does what it says.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { dockerTemplate } from "./env.js";

// build/sdk/typescript/test -> build/examples/typescript
const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "examples", "typescript");

async function run(name: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await promisify(execFile)("node", [join(examples, name + ".js")], { env: { ...process.env, ...env }, timeout: 300_000, maxBuffer: 16 << 20 });
  return stdout;
}

for (const [backend, template] of [["local", "default"], ["docker", dockerTemplate]] as const) {
  test(`run_snippet on ${backend}`, async () => {
    const out = await run("run_snippet", { PRIMER_TEMPLATE: template });
    assert.match(out, /^exit 0 in \d+ ms: 45$/m);
    assert.match(out, /\[stdout\] tick 1\n(.*\n)*\[stdout\] tick 3\nexit 0\n$/);
  });
}

test("parallel_map over 100 inputs", async () => {
  const r = JSON.parse((await run("parallel_map", { POOL_SIZE: "4" })).trim().split("\n").at(-1)!);
  assert.equal(r.inputs, 100);
  assert.equal(r.sum, Array.from({ length: 100 }, (_, i) => i * i).reduce((a, b) => a + b, 0));
});

test("scheduled_eval: the schedule starts the run", async () => {
  const r = JSON.parse((await run("scheduled_eval", { EVAL_EVERY: "2s" })).trim().split("\n").at(-1)!);
  assert.deepEqual([r.trigger, r.status], ["schedule", "succeeded"]);
  assert.deepEqual(r.verdicts, { "times-2": "pass", "times-3": "pass", "times-6": "pass" });
  assert.ok(r.junit_bytes > 0);
});

test("agent_session streams its transcript", async () => {
  const model = process.env.PRIMER_EXAMPLE_MODEL_URL;
  assert.ok(model, "PRIMER_EXAMPLE_MODEL_URL names a model stand-in (go test ./e2e -run TestTypeScriptSDK starts one)");
  const out = await run("agent_session", { MODEL_URL: model, MODEL_API_KEY: "sk-example", MODEL: "test-model-1" });
  assert.match(out, /tool workspace__write\(/);
  assert.match(out, /tool workspace__exec\(/);
  assert.match(out, /assistant: The snippet printed 42\./);
  assert.match(out, /run completed after \d+ turns/);
  assert.match(out, /out\.txt: 42/);
});
