// commands SANDBOX_ID: commands.run's foreground cases: exit codes and
// CommandExitError, stdout/stderr callbacks in the order written and while
// the command runs, env, cwd, the default user and root.
import { CommandExitError } from 'e2b'
import { caught, connect, main } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const r = {}
  const ok = await sbx.commands.run('echo out; echo err >&2')
  r.ok = { exitCode: ok.exitCode, stdout: ok.stdout, stderr: ok.stderr }
  r.fail = await caught(() => sbx.commands.run('echo partial; echo bad >&2; exit 7'))
  r.failIsCommandExitError = (await sbx.commands.run('exit 3').catch((e) => e)) instanceof CommandExitError

  // The command pauses between lines, long enough that the order of the
  // callbacks across the two streams is the order written; the times show
  // each line arrives while the command still runs.
  const events = []
  const t0 = performance.now()
  const streamed = await sbx.commands.run(
    'for i in 1 2 3; do echo out$i; sleep 0.3; echo err$i >&2; sleep 0.3; done',
    {
      onStdout: (d) => events.push({ s: 'out', d, t: performance.now() - t0 }),
      onStderr: (d) => events.push({ s: 'err', d, t: performance.now() - t0 }),
    },
  )
  r.stream = { events, endMs: performance.now() - t0, stdout: streamed.stdout, stderr: streamed.stderr }

  r.env = (await sbx.commands.run('echo "$FOO|$BAR"', { envs: { FOO: 'a b', BAR: 'c' } })).stdout
  r.cwd = (await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout
  r.defaultCwd = (await sbx.commands.run('pwd')).stdout
  r.user = (await sbx.commands.run('whoami; id -u; echo $HOME')).stdout
  r.root = (await sbx.commands.run('whoami; id -u; echo $HOME', { user: 'root' })).stdout
  r.rootOnly = await caught(() => sbx.commands.run('touch /etc/primer-e2b-user-test'))
  r.rootCan = await caught(() => sbx.commands.run('touch /etc/primer-e2b-root-test && echo yes', { user: 'root' }))
  return r
})
