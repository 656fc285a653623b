// bench: one long-lived process for e2e/bench_e2b_test.go, so node's
// start-up is not counted. It reads one JSON request a line on stdin and
// answers one JSON line on stdout with the times in milliseconds:
//   {"op":"create_run","template":T}   Sandbox.create -> first commands.run (then kill, not timed)
//   {"op":"run_true","id":ID,"n":N,"url":U,"key":K}
//                                      N x commands.run('true'), each followed by
//                                      Primer's exec API (POST U/v1/workspaces/ID/exec)
//                                      running the command line the SDK sends,
//                                      /bin/bash -l -c true, from this process with
//                                      the HTTP client the SDK uses (undici)
//   {"op":"files","id":ID,"n":N,"size":S}  N x files.write then files.read of S random bytes
import { createInterface } from 'node:readline'
import { randomBytes } from 'node:crypto'
import { Sandbox } from 'e2b'
import { Agent, fetch as undiciFetch } from 'undici'

// api is the HTTP client of the exec API baseline: undici, as the SDK's own
// transport on node, with its dispatcher's settings.
const apiAgent = new Agent({ allowH2: true, connections: 10 })
const execAPI = async (url, key, id, command) => {
  const res = await undiciFetch(`${url}/v1/workspaces/${id}/exec`, {
    method: 'POST',
    dispatcher: apiAgent,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ command }),
  })
  const out = await res.json()
  if (res.status !== 200 || out.exit_code !== 0) throw new Error(`exec API: ${res.status} ${JSON.stringify(out)}`)
}

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
  async run_true({ id, n, url, key }) {
    const sbx = await sandbox(id)
    const bash = ['/bin/bash', '-l', '-c', 'true']
    // The first calls open the connections.
    await sbx.commands.run('true')
    await execAPI(url, key, id, bash)
    const ms = []
    const api = []
    for (let i = 0; i < n; i++) {
      let t0 = performance.now()
      await sbx.commands.run('true')
      ms.push(performance.now() - t0)
      t0 = performance.now()
      await execAPI(url, key, id, bash)
      api.push(performance.now() - t0)
    }
    return { ms, api }
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
