// The package as users install it: dist/ is what tsc makes of src/ now
// (checked in, so `npm install ./sdk/typescript` needs no build), the
// whole SDK type-checks strictly (tsc --noEmit), and its core imports no
// Node module (it runs wherever fetch does).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

// build/sdk/typescript/test/build.test.js -> sdk/typescript
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
const tsc = join(root, "node_modules", ".bin", "tsc");

function files(dir: string, prefix = ""): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(dir, join(prefix, d.name)) : [join(prefix, d.name)])).sort();
}

// The tests and examples were type-checked when they were compiled to
// build/ (tsconfig.test.json, which e2e's TestTypeScriptSDK runs first).
test("tsc --noEmit is clean on the client core alone (strict, no Node types: it runs wherever fetch does)", () => {
  execFileSync(tsc, ["-p", "tsconfig.core.json", "--noEmit"], { cwd: root, stdio: "pipe" });
});

test("dist/ is up to date with src/ (npm run build, then commit dist/)", () => {
  const out = mkdtempSync(join(tmpdir(), "primer-sdk-dist-"));
  try {
    execFileSync(tsc, ["-p", "tsconfig.json", "--outDir", out], { cwd: root, stdio: "pipe" });
    const want = files(out);
    assert.deepEqual(files(join(root, "dist")), want, "dist/ has other files than tsc makes: run npm run build in sdk/typescript");
    for (const f of want) {
      assert.equal(readFileSync(join(root, "dist", f), "utf8"), readFileSync(join(out, f), "utf8"), `dist/${f} is stale: run npm run build in sdk/typescript`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the client core imports no Node module (only src/node.ts, \"@primer/sdk/node\", does)", () => {
  for (const f of files(join(root, "src")).filter((f) => f !== "node.ts")) {
    const src = readFileSync(join(root, "src", f), "utf8");
    assert.doesNotMatch(src, /from\s+["']node:|require\(|from\s+["'](fs|path|os|http|https|net|child_process)["']/, `src/${f} imports a Node module`);
  }
});

test("src/schema.ts is what openapi-typescript makes of docs/openapi.json (make sdk-ts-types)", () => {
  const out = mkdtempSync(join(tmpdir(), "primer-sdk-schema-"));
  try {
    const gen = join(root, "node_modules", ".bin", "openapi-typescript");
    execFileSync(gen, [join(root, "..", "..", "docs", "openapi.json"), "-o", join(out, "schema.ts")], { cwd: root, stdio: "pipe" });
    assert.ok(readFileSync(join(root, "src", "schema.ts"), "utf8") === readFileSync(join(out, "schema.ts"), "utf8"),
      "sdk/typescript/src/schema.ts is out of date with docs/openapi.json: run make sdk-ts-types, then npm run build in sdk/typescript, and commit both");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
