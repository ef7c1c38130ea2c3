// The JavaScript samples of the docs run as written, on real nodes (issue 52: the README's Memorie example imported
// packages npm does not have). Every ```js block of the pages below that imports "reme-es-memorie" is run with node
// against each test node, its URL and `indexPrefix` "myapp" swapped for the node's and a fresh prefix; the package
// resolves through its own name (package.json `exports`), as in a user's project. A sample must exit 0 and leave no
// index behind; a ```text block right after it (or after one line of prose) is its output, compared exactly; a score it prints (4 decimals or more)
// must appear on the page to 4 decimals, so the figures the page quotes are the ones each engine gives.
// tests/unit/test_doc_samples.py does the same for the pages' ReMe YAML.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, describe, it } from "node:test";

import { freshPrefix, http, targets } from "./targets.js";

const here = dirname(fileURLToPath(import.meta.url)); // memorie/dist/test
const ROOT = join(here, "..", "..", "..");
const PAGES = ["README.md", "docs/memorie.md", "memorie/README.md"];

interface Sample {
  where: string;
  code: string;
  output?: string;
  page: string;
}

function samples(): Sample[] {
  const found: Sample[] = [];
  for (const page of PAGES) {
    const text = readFileSync(join(ROOT, page), "utf8");
    for (const m of text.matchAll(/^```js\n([\s\S]*?)^```\n(?:\n(?:[^`\n][^\n]*\n\n)?```text\n([\s\S]*?)^```\n)?/gm)) {
      if (!m[1]!.includes('from "reme-es-memorie"')) continue;
      const line = text.slice(0, m.index).split("\n").length;
      found.push({ where: `${page}:${line}`, code: m[1]!, output: m[2], page: text });
    }
  }
  return found;
}

const SAMPLES = samples();
const written: string[] = [];
after(() => written.forEach((f) => rmSync(f, { force: true })));

it("the pages have their samples: first.mjs in README.md and docs/memorie.md, the three stores' walk", () => {
  const where = SAMPLES.map((s) => s.where.split(":")[0]);
  assert.ok(where.includes("README.md") && where.includes("docs/memorie.md"), where.join(", "));
  assert.ok(SAMPLES.some((s) => s.code.includes("createGraphStore") && s.output !== undefined), "the walk with its output");
  for (const s of SAMPLES) assert.ok(s.code.includes('"http://127.0.0.1:9200"') && s.code.includes('"myapp"'), s.where);
});

for (const { engine, url } of targets) {
  describe(`doc samples on ${engine} ${url}`, () => {
    for (const [n, s] of SAMPLES.entries()) {
      it(`${s.where} runs as written`, async () => {
        const prefix = freshPrefix("doc");
        const file = join(here, `_doc-sample-${process.pid}-${engine}-${n}.mjs`);
        written.push(file);
        writeFileSync(file, s.code.replaceAll('"http://127.0.0.1:9200"', JSON.stringify(url)).replaceAll('"myapp"', JSON.stringify(prefix)));
        const { stdout } = await promisify(execFile)("node", [file], { encoding: "utf8", timeout: 120_000 }).catch(
          (exc: { stdout?: string; stderr?: string }) => assert.fail(`${s.where}: ${exc.stdout ?? ""}${exc.stderr ?? ""}`),
        );
        if (s.output !== undefined) assert.equal(stdout, s.output, `${s.where}: the output the page shows`);
        assert.ok(stdout.trim() !== "", `${s.where} printed nothing`);
        for (const score of stdout.match(/\d\.\d{4,}/g) ?? []) {
          const shown = score.slice(0, 6);
          assert.ok(s.page.includes(shown), `${s.where} printed ${score} on ${engine}; the page does not show ${shown}`);
        }
        const left = await http(url, "GET", `/_cat/indices/${prefix}*?format=json`);
        assert.deepEqual(left.body, [], `${s.where} left indices behind`);
      });
    }
  });
}
