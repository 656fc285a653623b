// watch SANDBOX_ID: watchDir sees a file created, written, renamed and
// removed, and a directory made, in that order.
import { connect, main, until } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const dir = `/tmp/watched-${Date.now()}`
  await sbx.files.makeDir(dir)
  const events = []
  const w = await sbx.files.watchDir(dir, (e) => events.push({ name: e.name, type: e.type }), { timeoutMs: 0 })
  await sbx.files.write(`${dir}/a.txt`, 'hello')
  await sbx.files.rename(`${dir}/a.txt`, `${dir}/b.txt`)
  await sbx.files.remove(`${dir}/b.txt`)
  await sbx.files.makeDir(`${dir}/sub`)
  await until('the events of every step', 10000, () =>
    events.some((e) => e.name === 'b.txt' && e.type === 'remove') && events.some((e) => e.name === 'sub'))
  await w.stop()
  return { events }
})
