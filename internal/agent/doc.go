// Package agent wires one running crawl: it opens the crawl directory
// (locked against a second process), the sieve, the ready queue, the WARC
// store and the frontier, starts the goroutine pools (fetchers, parsers, the
// progress reporter) and stops them through a context.Context, saving what
// is queued so that the same directory resumes the crawl.
//
// Data flow and ownership:
//
//	seeds ─► Frontier.Enqueue ─► sieve ─► ready queue ─► scheduler (frontier.Run)
//	scheduler ─Task─► fetchers ─Outcome─► scheduler
//	fetchers ─fetched─► parsers ─► WARC store; links ─► Frontier.Enqueue
//
// Every channel between stages is bounded. The fetchers end when the
// scheduler closes Todo; the parsers end when the fetchers are gone and the
// results channel is drained, so everything fetched is stored before the
// WARC files are closed.
//
// The WARC store's Prior, the earlier crawl's payloads of --dedup-index,
// is loaded once at the start (dedup.go); a path that cannot be read is a
// usage error.
package agent
