// The per-call overhead of the SDK over raw fetch, for e2e's
// TestBenchTypeScriptSDK: exec `true` in one workspace, N times each way,
// taking turns so both see the same server and machine, after a warm-up.
// Prints one JSON line: {"sdk": [ms...], "raw": [ms...]}.
//
//   PRIMER_URL=... PRIMER_TOKEN=... node bench/exec.mjs WORKSPACE_ID N

import { Primer } from "@primer/sdk";

const [id, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 500);
const url = process.env.PRIMER_URL;
const token = process.env.PRIMER_TOKEN;
const primer = new Primer({ url, token });
const ws = primer.workspaces.handle(id);

const execURL = `${url}/v1/workspaces/${id}/exec`;
const body = JSON.stringify({ command: ["true"] });
const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
async function raw() {
  const resp = await fetch(execURL, { method: "POST", headers, body });
  const r = await resp.json();
  if (resp.status !== 200 || r.exit_code !== 0) throw new Error(`raw exec: ${resp.status} ${JSON.stringify(r)}`);
}
async function sdk() {
  const r = await ws.exec(["true"]);
  if (r.exit_code !== 0) throw new Error(`sdk exec: exit ${r.exit_code}`);
}

for (let i = 0; i < 50; i++) {
  await raw();
  await sdk();
}
const out = { sdk: [], raw: [] };
for (let i = 0; i < n; i++) {
  // Alternate which goes first, so neither always follows the other.
  const order = i % 2 === 0 ? [["sdk", sdk], ["raw", raw]] : [["raw", raw], ["sdk", sdk]];
  for (const [name, f] of order) {
    const t0 = performance.now();
    await f();
    out[name].push(performance.now() - t0);
  }
}
console.log(JSON.stringify(out));
