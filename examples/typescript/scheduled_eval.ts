// An eval suite defined in code, run on a schedule: the suite's cases and
// its schedule (a Temporal Schedule on the server) in one document; the
// program waits for the first scheduled run, prints its results and the
// JUnit report's size, and pauses the schedule.
//
//   node dist/scheduled_eval.js      (EVAL_EVERY: default 15s; KEEP=1 keeps the suite scheduled)

import { Primer, type SuiteSpec } from "@primer/sdk";

const primer = await Primer.connect();
const id = process.env.SUITE_ID ?? `nightly-${Date.now().toString(36)}`;
const exercise = (n: number, want: number) => `def f(x):\n    return x * ${n}\n\nassert f(7) == ${want}, f(7)\nprint("ok")\n`;

const suite: SuiteSpec = {
  id,
  description: "multiplication, every interval",
  template_id: process.env.PRIMER_TEMPLATE ?? "default",
  concurrency: 4,
  defaults: { timeout: "30s" },
  schedule: { interval: process.env.EVAL_EVERY ?? "15s", overlap: "skip" },
  cases: [2, 3, 6].map((n) => ({
    id: `times-${n}`,
    files: { "check.py": exercise(n, 7 * n) },
    command: ["python3", "check.py"],
    expect: { exit_code: 0, stdout_contains: ["ok"] },
    labels: { factor: String(n) },
  })),
};
await primer.suites.put(suite); // create, or replace the cases and schedule of an existing one

// Wait for the schedule's first run, then follow it to its end.
let runId: string | undefined;
while (!runId) {
  runId = (await primer.runs.list({ suite_id: id, limit: 1 }))[0]?.id;
  if (!runId) await new Promise((r) => setTimeout(r, 500));
}
const run = await primer.runs.wait(runId, { onProgress: (p) => console.error(`progress: ${p.pass} pass, ${p.fail} fail, ${p.running} running`) });
const results = await primer.runs.results(run.id);
const junit = await primer.runs.junit(run.id);
console.log(JSON.stringify({ suite: id, run: run.id, trigger: run.trigger, status: run.status, verdicts: Object.fromEntries(results.map((r) => [r.case_id, r.verdict])), junit_bytes: junit.length }));

if (!process.env.KEEP) await primer.suites.delete(id);
else await primer.suites.pause(id);
