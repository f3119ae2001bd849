// Package atomicfile replaces files whole and makes directory changes
// durable: the one place where Petrel's state files (checkpoints,
// manifests, counters, indexes, the cluster's outbox) are written.
//
// Invariants: Write goes through PATH.tmp renamed over PATH, so a reader
// (or a restart after a crash) sees the old content or the new, never a
// mix, and a failed Write leaves PATH as it was and no PATH.tmp behind.
// A rename is durable only once its directory is synced (SyncDir, or
// Options.SyncDir). Nothing here holds state; every function is safe for
// concurrent use on different paths.
package atomicfile
