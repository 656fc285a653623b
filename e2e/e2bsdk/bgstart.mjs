// bgstart SANDBOX_ID GATE: starts a background command that prints
// "before", waits for the file GATE, prints "after" and exits 5; prints its
// pid once "before" was seen, then this process exits, dropping its
// connection. bgconnect picks it up from a new process.
import { connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const gate = process.argv[3]
  let seen = ''
  const h = await sbx.commands.run(
    `echo before; while [ ! -e ${gate} ]; do sleep 0.05; done; echo after; exit 5`,
    { background: true, timeoutMs: 0, onStdout: (d) => { seen += d } },
  )
  await until('"before"', 10000, () => seen.includes('before'))
  return { pid: h.pid, seen }
})
