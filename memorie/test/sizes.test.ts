// Sizes held by the project's own test (issue 51, STYLE.md): no module of memorie/src over 400 lines and no function
// over 60, with no allow-list. Functions are found with the TypeScript compiler's own parser (declarations, methods,
// constructors, accessors, arrow functions and function expressions, nested ones each on its own), so a long body
// cannot hide in a callback; a function's lines run from its first token to its last, comments inside counted.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src");
export const MAX_MODULE_LINES = 400;
export const MAX_FUNCTION_LINES = 60;
/** `file` or `file:function` of a known exception; empty, and to stay so. */
const ALLOWED: string[] = [];

/** Every `.ts` file under `dir`, sorted. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []))
    .sort();
}

/** Lines of a file as an editor counts them (a final newline ends the last line, it does not start one). */
export function moduleLines(text: string): number {
  return text.length === 0 ? 0 : text.replace(/\n$/, "").split("\n").length;
}

function nameOf(node: ts.Node, file: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (named.name) return named.name.getText(file);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(file);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(file);
  if (parent && ts.isPropertyDeclaration(parent)) return parent.name.getText(file);
  return `<anonymous at line ${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}>`;
}

/** (name, first line, lines) of every function in `text` longer than `max` lines. */
export function longFunctions(text: string, max = MAX_FUNCTION_LINES, path = "x.ts"): [string, number, number][] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: [string, number, number][] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)
    ) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > max) found.push([nameOf(node, file), first + 1, last - first + 1]);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe("sizes of memorie/src (issue 51)", () => {
  const files = sources(SRC);

  it("finds the sources", () => {
    assert.ok(files.some((f) => f.endsWith("vector-store.ts")) && files.length >= 20, `sources under ${SRC}: ${files.length}`);
  });

  it(`no module over ${MAX_MODULE_LINES} lines`, () => {
    const over = files
      .map((f) => [relative(SRC, f), moduleLines(readFileSync(f, "utf8"))] as const)
      .filter(([name, n]) => n > MAX_MODULE_LINES && !ALLOWED.includes(name))
      .map(([name, n]) => `${name}: ${n} lines`);
    assert.deepEqual(over, []);
  });

  it(`no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const over = files.flatMap((f) => {
      const name = relative(SRC, f);
      return longFunctions(readFileSync(f, "utf8"), MAX_FUNCTION_LINES, name)
        .filter(([fn]) => !ALLOWED.includes(`${name}:${fn}`))
        .map(([fn, line, n]) => `${name}:${line} ${fn}: ${n} lines`);
    });
    assert.deepEqual(over, []);
  });

  it("the allow-list is empty", () => {
    assert.deepEqual(ALLOWED, []);
  });

  it("the function finder sees each kind, nested ones on their own, and counts first to last line", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  x${i}();`).join("\n");
    const text = [
      `function decl() {\n${body(61)}\n}`,
      `class C {\n  constructor() {\n${body(61)}\n  }\n  method() {\n${body(60)}\n  }\n  get g() {\n${body(62)}\n  }\n}`,
      `const arrow = () => {\n${body(61)}\n};`,
      `const expr = function () {\n${body(61)}\n};`,
      `function outer() {\n  const inner = async () => {\n${body(61)}\n  };\n}`,
    ].join("\n");
    assert.deepEqual(
      longFunctions(text).map(([name, , n]) => `${name} ${n}`),
      ["decl 61", "constructor 61", "g 62", "arrow 61", "expr 61", "outer 63", "inner 61"],
    );
    assert.equal(moduleLines("a\nb\n"), 2);
    assert.equal(moduleLines("a\nb"), 2);
  });
});
