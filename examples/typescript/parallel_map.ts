// A pool-backed parallel map: 100 inputs over warm workspaces leased from
// a pool, at most the pool's size at once; each lease goes back to the
// pool when its worker is done.
//
//   node dist/parallel_map.js        (PRIMER_TEMPLATE: the template; POOL_SIZE: default 4)

import { Primer } from "@primer/sdk";

const primer = await Primer.connect();
const size = Number(process.env.POOL_SIZE ?? 4);
const pool = await primer.pools.create({ id: `map-${Date.now().toString(36)}`, template_id: process.env.PRIMER_TEMPLATE ?? "default", size });
try {
  const inputs = Array.from({ length: 100 }, (_, i) => i);
  const started = Date.now();
  const squares = await primer.pools.map(pool.id, inputs, async (ws, n) => {
    const r = await ws.exec(["sh", "-c", `echo $((${n} * ${n}))`]);
    if (r.exit_code !== 0) throw new Error(`input ${n}: ${r.stderr}`);
    return Number(r.stdout.trim());
  });
  const sum = squares.reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({ inputs: inputs.length, sum, ms: Date.now() - started, pool: pool.id, size }));
} finally {
  await primer.pools.delete(pool.id);
}
