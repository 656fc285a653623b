// create TEMPLATE [METADATA_JSON] [TIMEOUT_MS]: Sandbox.create, then the
// first command and a file round trip in it, as a user's first lines would.
import { Sandbox } from 'e2b'
import { main } from './lib.mjs'

main(async () => {
  const [template, metadata, timeoutMs] = process.argv.slice(2)
  const t0 = performance.now()
  const sbx = await Sandbox.create(template, {
    metadata: metadata ? JSON.parse(metadata) : undefined,
    timeoutMs: timeoutMs ? Number(timeoutMs) : undefined,
  })
  const created = performance.now()
  const run = await sbx.commands.run('echo hello; whoami; pwd')
  const firstRun = performance.now()
  await sbx.files.write('hello.txt', 'hi from the sdk')
  const read = await sbx.files.read('/home/user/hello.txt')
  const info = await sbx.getInfo()
  return {
    sandboxId: sbx.sandboxId,
    templateId: info.templateId,
    metadata: info.metadata,
    state: info.state,
    envdVersion: sbx.envdApi?.version,
    stdout: run.stdout,
    exitCode: run.exitCode,
    read,
    createMs: created - t0,
    firstRunMs: firstRun - t0,
  }
})
