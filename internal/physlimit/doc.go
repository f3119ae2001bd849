// Package physlimit holds no production code: its benchmarks measure, with
// Go's own primitives on this machine, the unavoidable per-connection and
// per-byte costs of crawling the real-shaped web (internal/testweb,
// [testweb.ShapeReal]), whose sum per page is the physical limit a crawler
// written in Go can approach there. BENCHMARKS.md (§ Where the CPU goes on
// the real shape) adds them up with the shape's page sizes and a crawl's
// connection counts and compares Petrel's measured CPU per page with them.
//
// Every benchmark reports, besides ns/op (wall time, which a shared
// machine inflates), the CPU time of the benchmark's own OS thread
// (cpu-ns/op, from CLOCK_THREAD_CPUTIME_ID, the goroutine locked to its
// thread), so that the client's side of a handshake is measured apart from
// the server's running in the same process, and a loaded machine's waits
// are not counted. Per-byte benchmarks also report cpu-ns/KB, per KiB of
// the bytes they consume (decoded HTML for decompression and the tokenizing
// scan, bytes as transferred for decryption, digests and WARC compression).
//
// The bytes are the real shape's own pages, rendered by [testweb.Gen] for
// a sample of (host, page) pairs and compressed as the web serves them
// (gzip and brotli at level 1).
//
// Files:
//
//   - doc.go: this overview.
//   - pages_test.go: the sample of real-shape pages and their encodings, the
//     thread CPU clock.
//   - physlimit_test.go: the benchmarks — TLS handshakes (full and
//     resumed, TLS 1.3 and 1.2), TLS record reads, AES-GCM, decompression,
//     SHA-1 and SHA-256, WARC gzip, socket reads, the '<' scan, and one page
//     through all the per-byte steps; beside the floor of parsing, Petrel's
//     own parse pass (BenchmarkPetrelParse), the one benchmark of
//     production code (its garbage collection, on other threads, is not
//     counted).
//   - race_test.go, norace_test.go: whether the race detector is on
//     (TestSample skips under it).
package physlimit
