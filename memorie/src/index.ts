export { createSearchStore, type OpenSearchStore, type SearchStoreOptions } from "./search-store.js";
export { createVectorStore, type OpenSearchVectorStore, type VectorStoreOptions } from "./vector-store.js";
export { createGraphStore, type GraphStoreOptions, type OpenSearchGraphStore } from "./graph-store.js";
export { GraphStoreError, RestoreError, SearchError, StoreError, type StoreErrorOptions, VectorStoreError } from "./errors.js";
export type { ForgetOptions, ForgetResult } from "./forget.js";
export {
  createSnapshot,
  type CreateSnapshotOptions,
  type RestoredKind,
  restoreTenant,
  type RestoreTenantOptions,
  type RestoreTenantResult,
  type SnapshotInfo,
} from "./restore.js";
export type { CalibrateOptions, Calibration } from "./knn-calibration.js";
export type { Auth, ConnectionOptions, Engine, RefreshPolicy } from "./connection.js";
export { keywordScore, vectorScore } from "./dialect.js";
export type * from "./types.js";
