// Eval suites defined in code: run and wait (seeing progress), results as
// objects, JSONL and JUnit, compare two runs, and a schedule.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FailedPreconditionError, InvalidError, type Progress, type SuiteSpec } from "@primer/sdk";
import { admin, dockerTemplate, unique } from "./env.js";

const p = admin();

function suite(id: string, template: string, answer: string): SuiteSpec {
  return {
    id, template_id: template, concurrency: 2, retries: 0,
    defaults: { timeout: "30s" },
    cases: [
      { id: "echo", command: ["sh", "-c", "echo hello"], expect: { exit_code: 0, stdout_contains: ["hello"] }, labels: { level: "easy" } },
      { id: "math", files: { "answer.txt": answer }, command: "test \"$(cat answer.txt)\" = 42", expect: { exit_code: 0 } },
      { id: "score", command: "echo '{\"score\": 0.5}' > score.json", score_file: "score.json", collect: ["score.json"] },
    ],
  };
}

for (const [name, template] of [["local", "default"], ["docker", dockerTemplate]] as const) {
  test(`suite on ${name}: run, wait, results, junit, compare`, async () => {
    const id = unique("ts-suite");
    await p.suites.create(suite(id, template, "42"));
    try {
      assert.equal((await p.suites.get(id)).case_count, 3);
      assert.deepEqual((await p.suites.cases(id)).map((c) => c.id), ["echo", "math", "score"]);
      const seen: Progress[] = [];
      const base = await p.suites.run(id, { triggered_by: "ts-sdk test" }, { wait: true, onProgress: (pr) => seen.push(pr) });
      assert.equal(base.status, "succeeded");
      assert.ok(seen.length >= 1 && seen[0]!.total === 3);
      const results = await p.runs.results(base.id);
      assert.deepEqual(results.map((r) => [r.case_id, r.verdict]), [["echo", "pass"], ["math", "pass"], ["score", "pass"]]);
      assert.equal(results[2]!.score, 0.5);
      assert.equal(results[2]!.artifacts?.[0]?.path, "score.json");
      const streamed = [];
      for await (const r of p.runs.resultsStream(base.id)) streamed.push(r.case_id);
      assert.deepEqual(streamed, ["echo", "math", "score"]);
      const junit = await p.runs.junit(base.id);
      assert.match(junit, /<testsuite[^>]*name="[^"]*"/);
      assert.equal((junit.match(/<testcase /g) ?? []).length, 3);

      // The same suite with a wrong answer: one regression.
      await p.suites.update(id, suite(id, template, "41"));
      const head = await p.suites.run(id, {}, { wait: true });
      const cmp = await p.runs.compare(head.id, base.id);
      assert.deepEqual(cmp.regressions.map((r) => r.case), ["math"]);
      assert.deepEqual(cmp.fixes, []);
      const only = await p.suites.run(id, { labels: { level: "easy" } }, { wait: true });
      assert.equal(only.total, 1);
      assert.ok((await p.runs.list({ suite_id: id })).length >= 3);
      await assert.rejects(p.runs.cancel(only.id), FailedPreconditionError);
      await assert.rejects(p.suites.run(id, { cases: ["nope"] }), (e: unknown) => e instanceof InvalidError && e.field === "cases");
    } finally {
      await p.suites.delete(id, { missingOk: true });
    }
  });
}

test("suite schedule: runs on its own, pause, trigger", async () => {
  const id = unique("ts-sched");
  const spec = { ...suite(id, "default", "42"), schedule: { interval: "1h", paused: true } };
  const s = await p.suites.create(spec);
  try {
    assert.equal(s.schedule_status?.paused, true);
    await p.suites.trigger(id);
    let runs = await p.runs.list({ suite_id: id });
    for (let i = 0; runs.length === 0 && i < 300; i++) {
      await new Promise((r) => setTimeout(r, 100));
      runs = await p.runs.list({ suite_id: id });
    }
    assert.equal(runs.length, 1);
    const run = await p.runs.wait(runs[0]!.id);
    assert.deepEqual([run.status, run.trigger], ["succeeded", "schedule"]);
    assert.equal((await p.suites.resume(id)).schedule_status?.paused, false);
    assert.equal((await p.suites.pause(id)).schedule_status?.paused, true);
  } finally {
    await p.suites.delete(id, { missingOk: true });
  }
});
