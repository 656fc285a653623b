// autopause TEMPLATE TIMEOUT_MS: Sandbox.create with lifecycle.onTimeout
// 'pause' (the SDK sends autoPause), a file written, then setTimeout
// (TIMEOUT_MS) and the timeout runs out: the sandbox is listed paused, not
// killed. Sandbox.connect
// resumes it with its file and a fresh timeout, and it runs commands again
// (the Go test deletes it).
import { Sandbox } from 'e2b'
import { caught, main, until } from './lib.mjs'

// listedState is the state Sandbox.list shows for id, null when unlisted.
async function listedState(id) {
  const pager = Sandbox.list({ query: { metadata: { suite: 'autopause' } } })
  while (pager.hasNext) {
    for (const s of await pager.nextItems()) {
      if (s.sandboxId === id) return s.state
    }
  }
  return null
}

main(async () => {
  const [template, timeoutMs] = process.argv.slice(2)
  const sbx = await Sandbox.create(template, {
    metadata: { suite: 'autopause' },
    timeoutMs: 120000,
    lifecycle: { onTimeout: 'pause' },
  })
  await sbx.files.write('kept.txt', 'kept across the pause')
  const created = await sbx.getInfo()
  // The short timeout starts once the file is there: a create may take
  // longer than it.
  await sbx.setTimeout(Number(timeoutMs))
  const t0 = Date.now()
  await until('the sandbox to be listed paused', Number(timeoutMs) + 120000, async () => (await listedState(sbx.sandboxId)) === 'paused')
  const pausedAfterMs = Date.now() - t0
  const pausedInfo = await Sandbox.getInfo(sbx.sandboxId)
  const connectedAt = new Date()
  const back = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120000 })
  const read = await caught(() => back.files.read('/home/user/kept.txt'))
  const run = await caught(() => back.commands.run('echo resumed'))
  const resumed = await back.getInfo()
  const listedAfter = await listedState(sbx.sandboxId)
  return {
    sandboxId: sbx.sandboxId,
    onTimeout: created.lifecycle?.onTimeout,
    createdState: created.state,
    pausedAfterMs,
    pausedState: pausedInfo.state,
    connectedAt,
    read,
    run,
    resumedState: resumed.state,
    resumedEndAt: resumed.endAt,
    listedAfter,
  }
})
