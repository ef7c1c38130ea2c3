// The package as a user gets it: `npm pack`, then `npm install <tarball>` into a fresh project in a temp folder,
// import both entry points, type-check a use of them, and one store round trip on a real node
// (scripts/check-pack.mjs; here with --no-build, since the test run has just built dist/).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { it } from "node:test";

import { targets } from "./targets.js";

const script = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts", "check-pack.mjs");

it("npm pack gives a tarball that installs into a fresh project, imports, type-checks and works", async () => {
  const { stdout } = await promisify(execFile)("node", [script, "--no-build", "--url", targets[0]!.url], { encoding: "utf8" })
    .catch((exc: { stdout?: string; stderr?: string }) => assert.fail(`${exc.stdout ?? ""}${exc.stderr ?? ""}`));
  assert.match(stdout, new RegExp(`round trip on ${targets[0]!.engine}: ok`));
  assert.match(stdout, /types: ok/);
  assert.match(stdout, /check-pack: ok \(reme-es-memorie-\d+\.\d+\.\d+\.tgz, \d+ files/);
});
