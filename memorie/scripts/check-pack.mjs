// Checks that `npm pack` makes a tarball a user can install into any project, as a new user would:
//   node scripts/check-pack.mjs [--no-build] [--url http://127.0.0.1:9200] [--keep]
// 1. package.json: not private, the version of the Python package (../pyproject.toml), no install scripts, and
//    `prepack` builds dist/ (so `npm pack` and `npm publish` always ship a fresh build).
// 2. `npm pack` (--no-build: `--ignore-scripts`, using the dist/ already built): the tarball holds dist/src, the
//    templates, README and package.json, no tests, and every source map carries its sources.
// 3. A fresh project in a temp folder: `npm install <tarball>`; the package is a copy, not a link into this
//    repository; both entry points import; their types check with tsc (NodeNext); with --url, a store round trip
//    (create, index, search, drop) runs against that node.
// Exits 1 with the reason on the first failed check. Prints the tarball's path.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, "..");
const args = process.argv.slice(2);
const build = !args.includes("--no-build");
const keep = args.includes("--keep");
const url = args.includes("--url") ? args[args.indexOf("--url") + 1] : undefined;

function fail(message) {
  console.error(`check-pack: ${message}`);
  process.exit(1);
}

function run(cmd, cmdArgs, cwd) {
  try {
    return execFileSync(cmd, cmdArgs, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (exc) {
    fail(`${cmd} ${cmdArgs.join(" ")} (in ${cwd}) failed:\n${exc.stdout ?? ""}${exc.stderr ?? ""}`);
  }
}

// 1. package.json
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const pyproject = readFileSync(join(pkgDir, "..", "pyproject.toml"), "utf8");
const pyVersion = /^\[project\][^[]*?^version\s*=\s*"([^"]+)"/ms.exec(pyproject)?.[1];
if (pkg.private) fail('package.json has "private": true; npm would refuse to publish it');
if (pkg.version !== pyVersion) fail(`package.json version ${pkg.version} is not pyproject.toml's version ${pyVersion}`);
for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
  if (pkg.scripts?.[script]) fail(`package.json has an install script "${script}": users' installs would run it`);
}
if (!/npm run build/.test(pkg.scripts?.prepack ?? "")) fail('package.json "prepack" must run "npm run build"');

// 2. the tarball
const work = mkdtempSync(join(tmpdir(), "reme-es-memorie-pack-"));
const packArgs = ["pack", "--json", "--pack-destination", work, ...(build ? [] : ["--ignore-scripts"])];
const packed = JSON.parse(run("npm", packArgs, pkgDir))[0];
const tarball = join(work, packed.filename);
const files = packed.files.map((f) => f.path);
const required = ["package.json", "README.md", "dist/src/index.js", "dist/src/index.d.ts", "dist/src/contract/index.js"];
for (const kind of ["memories", "vectors", "relations"]) required.push(`dist/templates/${kind}.json`);
for (const f of required) if (!files.includes(f)) fail(`the tarball lacks ${f}`);
const stray = files.filter((f) => !/^(package\.json|README\.md|LICENSE|dist\/src\/|dist\/templates\/)/.test(f));
if (stray.length > 0) fail(`the tarball holds files a user does not need: ${stray.join(", ")}`);
for (const map of files.filter((f) => f.endsWith(".map"))) {
  const parsed = JSON.parse(readFileSync(join(pkgDir, map), "utf8"));
  if (!Array.isArray(parsed.sourcesContent) || parsed.sourcesContent.some((c) => typeof c !== "string")) {
    fail(`${map} points at sources the tarball does not contain (no sourcesContent)`);
  }
}

// 3. a fresh project
const app = join(work, "my-app");
run("mkdir", ["-p", app], work);
writeFileSync(join(app, "package.json"), JSON.stringify({ name: "my-app", version: "1.0.0", private: true, type: "module" }));
run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball], app);
const installed = join(app, "node_modules", "reme-es-memorie");
if (lstatSync(installed).isSymbolicLink()) fail(`${installed} is a symlink, not an installed copy`);
const installedPkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
if (installedPkg.version !== pyVersion) fail(`installed version ${installedPkg.version}, expected ${pyVersion}`);

const smoke = `
import { createGraphStore, createSearchStore, createVectorStore, SearchError } from "reme-es-memorie";
import { runSearchStoreContract, makeMemory } from "reme-es-memorie/contract";
for (const f of [createGraphStore, createSearchStore, createVectorStore, runSearchStoreContract, makeMemory]) {
  if (typeof f !== "function") throw new Error("missing export");
}
const url = process.env.CHECK_URL;
if (url) {
  const indexPrefix = "check-pack-" + process.pid;
  const store = await createSearchStore({ url, indexPrefix });
  try {
    const m = makeMemory({ content: "packed and installed" });
    await store.index(m);
    const hits = await store.search({ query: "installed" });
    if (hits.length !== 1 || hits[0].memory.id !== m.id) throw new Error("round trip: " + JSON.stringify(hits));
  } finally {
    await store.drop();
    await store.close();
  }
  console.log("round trip on " + store.engine + ": ok");
}
console.log("imports: ok", SearchError.name);
`;
writeFileSync(join(app, "smoke.mjs"), smoke);
try {
  process.stdout.write(execFileSync("node", ["smoke.mjs"], { cwd: app, encoding: "utf8", env: { ...process.env, CHECK_URL: url ?? "" } }));
} catch (exc) {
  fail(`importing the installed package failed:\n${exc.stdout ?? ""}${exc.stderr ?? ""}`);
}

writeFileSync(join(app, "app.ts"), [
  'import { createSearchStore, type OpenSearchStore, type SearchStoreOptions } from "reme-es-memorie";',
  'import { runVectorStoreContract } from "reme-es-memorie/contract";',
  'const options: SearchStoreOptions = { url: "http://127.0.0.1:9200", indexPrefix: "myapp", callTimeoutMs: 10000 };',
  "export const open = (): Promise<OpenSearchStore> => createSearchStore(options);",
  "export const suite = runVectorStoreContract;",
  "",
].join("\n"));
writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
  compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true, types: [], skipLibCheck: true },
  include: ["app.ts"],
}));
run("node", [join(pkgDir, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app);
console.log("types: ok");
console.log(`check-pack: ok (${packed.filename}, ${files.length} files, ${packed.size} bytes)`);
if (keep) console.log(tarball);
else rmSync(work, { recursive: true, force: true });
