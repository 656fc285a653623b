// files SANDBOX_ID: the filesystem: a 5 MiB binary written and read back
// exactly (multipart and octet-stream uploads, bytes and stream
// downloads), several files in one upload, makeDir, list with depth,
// exists, getInfo, rename, remove, and a missing file.
import { createHash, randomBytes } from 'node:crypto'
import { caught, connect, main } from './lib.mjs'

const sha = (b) => createHash('sha256').update(b).digest('hex')

main(async () => {
  const sbx = await connect()
  const r = {}
  const big = randomBytes(5 << 20)
  r.sha = sha(big)
  const w = await sbx.files.write('/tmp/big.bin', big)
  r.written = { name: w.name, path: w.path, type: w.type }
  const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
  r.readBytes = { len: back.length, sha: sha(back) }
  await sbx.files.write('/tmp/big2.bin', big, { useOctetStream: true })
  const stream = await sbx.files.read('/tmp/big2.bin', { format: 'stream' })
  const parts = []
  for await (const c of stream) parts.push(Buffer.from(c))
  const streamed = Buffer.concat(parts)
  r.readStream = { len: streamed.length, sha: sha(streamed) }
  r.info = await sbx.files.getInfo('/tmp/big.bin')

  r.many = (await sbx.files.write([
    { path: '/tmp/tree/one.txt', data: 'one' },
    { path: '/tmp/tree/sub/two.txt', data: 'two' },
  ])).map((e) => e.path)
  r.madeDir = await sbx.files.makeDir('/tmp/tree/sub/deeper/deepest')
  r.madeDirAgain = await sbx.files.makeDir('/tmp/tree/sub/deeper/deepest')
  const entries = async (depth) => (await sbx.files.list('/tmp/tree', { depth })).map((e) => `${e.type}:${e.path}`).sort()
  r.list1 = await entries(1)
  r.list3 = await entries(3)
  r.existsFile = await sbx.files.exists('/tmp/tree/one.txt')
  r.existsDir = await sbx.files.exists('/tmp/tree/sub')
  r.existsMissing = await sbx.files.exists('/tmp/tree/none')
  const moved = await sbx.files.rename('/tmp/tree/one.txt', '/tmp/tree/sub/moved.txt')
  r.renamed = { path: moved.path, old: await sbx.files.exists('/tmp/tree/one.txt'), text: await sbx.files.read('/tmp/tree/sub/moved.txt') }
  await sbx.files.remove('/tmp/tree/sub')
  r.removed = await sbx.files.exists('/tmp/tree/sub')
  r.readMissing = await caught(() => sbx.files.read('/tmp/tree/sub/two.txt'))
  r.listMissing = await caught(() => sbx.files.list('/tmp/none'))

  // Ownership follows the user: a file written as root is root's.
  await sbx.files.write('/tmp/owned-by-root', 'x', { user: 'root' })
  await sbx.files.write('/tmp/owned-by-user', 'x')
  r.owners = [(await sbx.files.getInfo('/tmp/owned-by-root')).owner, (await sbx.files.getInfo('/tmp/owned-by-user')).owner]

  // Presigned URLs, as a browser or curl uses them: no header, at the
  // sandbox URL's host root.
  const up = await sbx.uploadUrl('/tmp/signed.txt', { useSignatureExpiration: 600 })
  const form = new FormData()
  form.append('file', new Blob(['signed upload']), 'signed.txt')
  const upRes = await fetch(up, { method: 'POST', body: form })
  const down = await sbx.downloadUrl('/tmp/signed.txt')
  const downRes = await fetch(down)
  r.signed = {
    up, upStatus: upRes.status, downStatus: downRes.status, text: await downRes.text(),
    readWithWriteURL: (await fetch(up)).status,
  }
  return r
})
