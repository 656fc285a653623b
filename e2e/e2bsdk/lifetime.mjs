// lifetime SANDBOX_ID TIMEOUT_MS: setTimeout moves the sandbox's end to
// TIMEOUT_MS from now (getInfo's endAt follows), and once it passes the
// sandbox is gone: getInfo fails with SandboxNotFoundError.
import { Sandbox } from 'e2b'
import { caught, connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const ms = Number(process.argv[3])
  const before = (await sbx.getInfo()).endAt
  const t0 = Date.now()
  await sbx.setTimeout(ms)
  const after = (await sbx.getInfo()).endAt
  await until('the sandbox to expire', ms + 120000, async () => (await caught(() => Sandbox.getInfo(sbx.sandboxId))).ok !== true)
  return {
    endBefore: before,
    endAfter: after,
    setAt: new Date(t0),
    goneAfterMs: Date.now() - t0,
    info: await caught(() => Sandbox.getInfo(sbx.sandboxId)),
  }
})
