// The README's example, run as written by a new user: a project of its
// own that installs the SDK from the checkout (npm install
// ./sdk/typescript, no build: dist/ is checked in) and runs it with node.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

test("the README's example runs as written after npm install ./sdk/typescript", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const code = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "README.md has a js example");
  assert.ok(code.split("\n").length <= 16, "the example stays short");
  const dir = mkdtempSync(join(tmpdir(), "primer-sdk-user-"));
  try {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user-project", private: true, type: "module" }));
    execFileSync("npm", ["install", root, "--offline", "--no-audit", "--no-fund"], { cwd: dir, stdio: "pipe" });
    writeFileSync(join(dir, "hello.mjs"), code);
    const out = execFileSync("node", ["hello.mjs"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
    assert.equal(out, "1\n2\n3\nhello from the sandbox\n");
    // The top-level README's lines, in the same project.
    const top = /## TypeScript SDK[\s\S]*?```js\n([\s\S]*?)```/.exec(readFileSync(join(root, "..", "..", "README.md"), "utf8"))?.[1];
    assert.ok(top, "README.md has a TypeScript SDK example");
    writeFileSync(join(dir, "top.mjs"), top);
    assert.match(execFileSync("node", ["top.mjs"], { cwd: dir, encoding: "utf8", timeout: 120_000 }), /exit_code: 0,[\s\S]*stdout: 'Linux /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
