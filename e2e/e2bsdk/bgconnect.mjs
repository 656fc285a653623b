// bgconnect SANDBOX_ID PID GATE: from a new process, finds the background
// command in the list, connects to it, opens its gate and waits for it:
// the output since the connect, and its exit code.
import { caught, connect, main } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const pid = Number(process.argv[3])
  const gate = process.argv[4]
  const listed = (await sbx.commands.list()).some((p) => p.pid === pid)
  const chunks = []
  const h = await sbx.commands.connect(pid, { onStdout: (d) => chunks.push(d), timeoutMs: 0 })
  await sbx.files.write(gate, '')
  const end = await caught(() => h.wait())
  return { listed, connectedPid: h.pid, chunks, end }
})
