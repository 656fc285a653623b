// kill SANDBOX_ID: kill answers true, the sandbox is gone for every call,
// and a second kill answers false.
import { Sandbox } from 'e2b'
import { caught, connect, main } from './lib.mjs'

main(async () => {
  const sbx = await connect()
  const id = sbx.sandboxId
  return {
    killed: await sbx.kill(),
    info: await caught(() => Sandbox.getInfo(id)),
    connect: await caught(() => Sandbox.connect(id)),
    run: await caught(() => sbx.commands.run('true', { requestTimeoutMs: 10000 })),
    listed: (await Sandbox.list().nextItems()).some((s) => s.sandboxId === id),
    again: await Sandbox.kill(id),
  }
})
