// tenant SANDBOX_ID: run with another tenant's key, nothing of the sandbox
// is visible or reachable: every call is not found, the list lacks it.
import { Sandbox } from 'e2b'
import { caught, main } from './lib.mjs'

main(async () => {
  const id = process.argv[2]
  const listed = []
  const pager = Sandbox.list()
  while (pager.hasNext) listed.push(...(await pager.nextItems()).map((s) => s.sandboxId))
  return {
    info: await caught(() => Sandbox.getInfo(id)),
    connect: await caught(() => Sandbox.connect(id)),
    setTimeout: await caught(() => Sandbox.setTimeout(id, 60000)),
    kill: await caught(() => Sandbox.kill(id)),
    listed,
    // The in-sandbox API without the sandbox's access token.
    envdNoToken: (await fetch(`${process.env.E2B_SANDBOX_URL}/process.Process/List`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': id },
      body: '{}',
    })).status,
  }
})
