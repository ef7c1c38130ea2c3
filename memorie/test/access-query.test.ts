// The query of a Memorie tenant's grant (`reme-es access grant --memorie-tenant`, built in Python by
// reme_es/adapters/security.py) is made of the stores' own scope clauses: the golden role body
// (tests/unit/golden/access_roles.json, tenant "acme" of prefix "team") is compared with them here, so a change of
// how a store indexes or matches a tenant fails this test until the grant follows.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { forgetQuery as forgetClause, indexNames } from "../src/dialect.js";
import { vectorFilter } from "../src/vector-dialect.js";

// the clauses are JSON of the engine's (`Clause`); this test reads into them
const forgetQuery = (...a: Parameters<typeof forgetClause>): any => forgetClause(...a);

const GOLDEN = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "unit", "golden", "access_roles.json"), "utf8"),
);

describe("the Memorie tenant grant's query", () => {
  const perm = GOLDEN.opensearch_memorie_role_read.index_permissions[0];
  const should = JSON.parse(perm.dls).bool.should;

  it("holds the memories' and the relations' forget clauses and the scoped vector store's filter", () => {
    const relations = forgetQuery("relations", { tenantId: "acme" }).bool.should.map((s: any) => s.bool.filter[0]);
    assert.deepEqual(should, [
      forgetQuery("memories", { tenantId: "acme" }).bool.filter[0],
      vectorFilter(undefined, { tenantId: "acme" }),
      ...relations,
    ]);
    assert.deepEqual(GOLDEN.elasticsearch_memorie_role_write.indices[0].query.bool.should, should);
  });

  it("covers each kind's alias and its versioned index", () => {
    for (const kind of ["memories", "vectors", "relations"] as const) {
      const { alias, index } = indexNames("team", kind);
      assert.ok(perm.index_patterns.includes(alias), alias);
      const versioned = perm.index_patterns.filter((p: string) => p === `${alias}-v*`);
      assert.equal(versioned.length, 1, `${alias}-v*`);
      assert.ok(index.startsWith(`${alias}-v`), index);
    }
  });
});
