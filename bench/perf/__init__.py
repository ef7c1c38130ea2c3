"""Performance: per-search cost, latency, bulk, sync, settle, concurrency, vector options, a team's server."""
