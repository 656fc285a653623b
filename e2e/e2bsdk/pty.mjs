// pty SANDBOX_ID: a terminal: tty names a /dev/pts device, stty size
// follows a resize, and an interactive python3 REPL answers.
import { connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const dec = new TextDecoder()
  let screen = ''
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += dec.decode(d, { stream: true }) }, timeoutMs: 0 })
  // step types a line and waits for a pattern in what the terminal shows
  // after it, returning the match.
  const step = async (line, pattern) => {
    const from = screen.length
    await sbx.pty.sendInput(term.pid, new TextEncoder().encode(line))
    let m
    await until(`${JSON.stringify(pattern.source)} after ${JSON.stringify(line)}`, 15000, () => (m = screen.slice(from).match(pattern)))
    return m[0]
  }
  const r = { pid: term.pid }
  r.tty = await step('tty\n', /\/dev\/pts\/\d+/)
  r.size = await step('stty size\n', /\d+ \d+/)
  await sbx.pty.resize(term.pid, { cols: 120, rows: 40 })
  r.resized = await step('stty size\n', /\d+ \d+/)
  r.prompt = await step('python3\n', />>> /)
  r.answer = await step('print(6 * 7)\n', /42/)
  await step('exit()\n', /\$ |# /)
  await sbx.pty.sendInput(term.pid, new TextEncoder().encode('exit 0\n'))
  const end = await term.wait()
  r.exitCode = end.exitCode
  return r
})
