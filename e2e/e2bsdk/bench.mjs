// bench: one long-lived process for e2e/bench_e2b_test.go, so node's
// start-up is not counted. It reads one JSON request a line on stdin and
// answers one JSON line on stdout with the times in milliseconds:
//   {"op":"create_run","template":T}   Sandbox.create -> first commands.run (then kill, not timed)
//   {"op":"run_true","id":ID,"n":N}     N x commands.run('true')
//   {"op":"files","id":ID,"n":N,"size":S}  N x files.write then files.read of S random bytes
import { createInterface } from 'node:readline'
import { randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'

const sandboxes = new Map()
const sandbox = async (id) => {
  if (!sandboxes.has(id)) sandboxes.set(id, await Sandbox.connect(id))
  return sandboxes.get(id)
}

const ops = {
  async create_run({ template }) {
    const t0 = performance.now()
    const sbx = await Sandbox.create(template)
    const created = performance.now()
    await sbx.commands.run('true')
    const ran = performance.now()
    await sbx.kill()
    return { id: sbx.sandboxId, createMs: created - t0, totalMs: ran - t0 }
  },
  async run_true({ id, n }) {
    const sbx = await sandbox(id)
    await sbx.commands.run('true') // the first call opens the connection
    const ms = []
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      await sbx.commands.run('true')
      ms.push(performance.now() - t0)
    }
    return { ms }
  },
  async files({ id, n, size }) {
    const sbx = await sandbox(id)
    const data = randomBytes(size)
    const write = []
    const read = []
    for (let i = 0; i < n; i++) {
      let t0 = performance.now()
      await sbx.files.write('/tmp/bench.bin', data)
      write.push(performance.now() - t0)
      t0 = performance.now()
      const back = await sbx.files.read('/tmp/bench.bin', { format: 'bytes' })
      read.push(performance.now() - t0)
      if (!Buffer.from(back).equals(data)) throw new Error(`read ${back.length} bytes that differ from the ${size} written`)
    }
    return { write, read }
  },
}

for await (const line of createInterface({ input: process.stdin })) {
  let answer
  try {
    const req = JSON.parse(line)
    answer = await ops[req.op](req)
  } catch (e) {
    answer = { fatal: `${e?.name}: ${e?.message}` }
  }
  process.stdout.write(JSON.stringify(answer) + '\n')
}
process.exit(0)
