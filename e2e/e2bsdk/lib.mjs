// Shared by the scenario scripts: each prints one JSON object on stdout,
// which e2e/e2b_test.go decodes and asserts on. The SDK reads
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY from the environment, as a
// user's code would; nothing here configures it otherwise.
import { Sandbox } from 'e2b'

// out prints the scenario's result and ends the process with status 0,
// even while SDK streams are still open.
export function out(result) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

// caught runs f and returns what it threw as {name, message, ...}, or
// {ok: true, value} when it did not throw, so a scenario can record an
// expected error as a result instead of ending on it.
export async function caught(f) {
  try {
    return { ok: true, value: await f() }
  } catch (e) {
    const r = { name: e?.name ?? String(e), message: e?.message ?? String(e) }
    if (e?.exitCode !== undefined) {
      r.exitCode = e.exitCode
      r.stdout = e.stdout
      r.stderr = e.stderr
    }
    return r
  }
}

// until resolves once cond() is true, checking every 20 ms, or rejects
// after ms: for output that streams in, never a fixed sleep.
export async function until(what, ms, cond) {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// connect attaches to the sandbox named by the first argument.
export async function connect() {
  const id = process.argv[2]
  if (!id) throw new Error('usage: node <script> SANDBOX_ID [...]')
  return Sandbox.connect(id)
}

// main runs a scenario and reports an unexpected error as {fatal} on
// stdout with status 1, so the Go test shows the SDK's own message.
export function main(f) {
  f().then(out, (e) => {
    process.stdout.write(JSON.stringify({ fatal: `${e?.name}: ${e?.message}`, stack: e?.stack }) + '\n', () => process.exit(1))
  })
}
