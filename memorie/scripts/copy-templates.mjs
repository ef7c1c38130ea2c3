// Copies the Memorie index templates (memorie/templates/*.json) and the engine settings the Python side shares
// (reme_es/engine_settings.json) into dist/templates, so a built or packed package carries them.
import { cpSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "..", "templates");
const target = join(here, "..", "dist", "templates");
mkdirSync(target, { recursive: true });
for (const name of readdirSync(source)) {
  if (name.endsWith(".json")) cpSync(join(source, name), join(target, name));
}
cpSync(join(here, "..", "..", "reme_es", "engine_settings.json"), join(target, "engine_settings.json"));
