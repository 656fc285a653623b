// process SANDBOX_ID: commands that outlive a call: background with list
// and kill, stdin (sendStdin, closeStdin), and a command's timeout.
import { caught, connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const r = {}

  // Background, listed, killed: wait ends with an error, the pid is gone.
  const bg = await sbx.commands.run('sleep 600', { background: true })
  r.bgPid = bg.pid
  r.listedBefore = (await sbx.commands.list()).some((p) => p.pid === bg.pid)
  r.killed = await bg.kill()
  r.waitAfterKill = await caught(() => bg.wait())
  await until('the killed command to leave the list', 10000, async () =>
    !(await sbx.commands.list()).some((p) => p.pid === bg.pid))
  r.killAgain = await sbx.commands.kill(bg.pid)

  // stdin: what is sent is echoed back by cat, then EOF ends it.
  let seen = ''
  const cat = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => { seen += d } })
  await sbx.commands.sendStdin(cat.pid, 'hello stdin\n')
  await until('cat to echo the first line', 10000, () => seen.includes('hello stdin\n'))
  await cat.sendStdin('second\n')
  await until('cat to echo the second line', 10000, () => seen.includes('second\n'))
  await cat.closeStdin()
  const catEnd = await cat.wait()
  r.stdin = { exitCode: catEnd.exitCode, stdout: catEnd.stdout }

  // timeoutMs bounds the command: the call fails, the process is ended.
  const t0 = performance.now()
  r.timeout = await caught(() => sbx.commands.run('sleep 600', { timeoutMs: 1000 }))
  r.timeoutMs = performance.now() - t0
  await until('the timed-out command to leave the list', 10000, async () =>
    !(await sbx.commands.list()).some((p) => p.cmd === '/bin/bash' && p.args.includes('sleep 600')))
  return r
})
