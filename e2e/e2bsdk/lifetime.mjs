// lifetime SANDBOX_ID LONGER_MS SHORTER_MS: setTimeout(LONGER_MS) moves the
// sandbox's end later, setTimeout(SHORTER_MS) then moves it sooner (E2B
// resets the timeout to now plus the value; getInfo's endAt follows both),
// and once it passes the sandbox is gone: getInfo fails with
// SandboxNotFoundError.
import { Sandbox } from 'e2b'
import { caught, connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const longer = Number(process.argv[3])
  const shorter = Number(process.argv[4])
  const before = (await sbx.getInfo()).endAt
  const t0 = Date.now()
  await sbx.setTimeout(longer)
  const extended = (await sbx.getInfo()).endAt
  const t1 = Date.now()
  await sbx.setTimeout(shorter)
  const after = (await sbx.getInfo()).endAt
  await until('the sandbox to expire', longer + 120000, async () => (await caught(() => Sandbox.getInfo(sbx.sandboxId))).ok !== true)
  return {
    endBefore: before,
    endExtended: extended,
    endAfter: after,
    setAt: new Date(t0),
    shortenedAt: new Date(t1),
    goneAfterMs: Date.now() - t1,
    info: await caught(() => Sandbox.getInfo(sbx.sandboxId)),
  }
})
