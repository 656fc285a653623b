// Run a snippet in a sandbox: a workspace from a template, a file, a
// command, and the workspace deleted when the block ends (`await using`),
// however it ends.
//
//   PRIMER_URL=http://127.0.0.1:8080 PRIMER_TOKEN=pmr... node dist/run_snippet.js
//   (PRIMER_TEMPLATE picks the template; default: the local "default")

import { Primer } from "@primer/sdk";

const primer = await Primer.connect(); // PRIMER_URL, PRIMER_TOKEN, ~/.config/primer/config.yaml
await using ws = await primer.workspaces.create(process.env.PRIMER_TEMPLATE ?? "default");

await ws.files.write("snippet.py", "import sys\nprint(sum(range(10)), file=sys.stdout)\nprint('to stderr', file=sys.stderr)\n");
const result = await ws.exec(["python3", "snippet.py"]);
console.log(`exit ${result.exit_code} in ${result.duration_ms} ms: ${result.stdout.trim()}`);

// The same, streamed as it prints.
const stream = ws.execStream("for i in 1 2 3; do echo tick $i; sleep 0.1; done");
for await (const chunk of stream) process.stdout.write(`[${chunk.stream}] ${chunk.data}`);
console.log(`exit ${(await stream.exit).exit_code}`);
