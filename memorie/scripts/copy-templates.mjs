// Copies the Memorie index templates (reme_es/index_templates/memorie/*.json, shared with the Python side's
// folder) into dist/templates, so a built or packed package carries them.
import { cpSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "..", "..", "reme_es", "index_templates", "memorie");
const target = join(here, "..", "dist", "templates");
mkdirSync(target, { recursive: true });
for (const name of readdirSync(source)) {
  if (name.endsWith(".json")) cpSync(join(source, name), join(target, name));
}
