/**
 * The contract suites of reme-es-memorie, for any Memorie SearchStore / VectorStore / GraphStore. They use node's
 * built-in test runner (`node --test`): call them at the top level of a test file with a factory of fresh stores.
 *
 *   import { runSearchStoreContract } from "reme-es-memorie/contract";
 *   runSearchStoreContract("my adapter", { create: () => makeStore(), destroy: (s) => s.drop() });
 */
export { type ContractTarget, makeMemory, makeRelation, unitVector } from "./common.js";
export { runSearchStoreContract, type SearchContractOptions } from "./search-store.js";
export { runVectorStoreContract } from "./vector-store.js";
export { type GraphContractTarget, runGraphStoreContract } from "./graph-store.js";
