// list METADATA_JSON LIMIT: Sandbox.list filtered by metadata, page by
// page (nextItems while hasNext, the SDK following X-Next-Token).
import { Sandbox } from 'e2b'
import { main } from './lib.mjs'

main(async () => {
  const [metadata, limit] = process.argv.slice(2)
  const pager = Sandbox.list({ query: { metadata: JSON.parse(metadata) }, limit: Number(limit) })
  const pages = []
  while (pager.hasNext) {
    pages.push((await pager.nextItems()).map((s) => ({ sandboxId: s.sandboxId, templateId: s.templateId, metadata: s.metadata, state: s.state })))
    if (pages.length > 20) throw new Error('more than 20 pages')
  }
  return { pages }
})
