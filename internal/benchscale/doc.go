// Package benchscale is Petrel's benchmark at scale: one agent crawling the
// generated web (internal/testweb's [testweb.Gen]: 10⁶ hosts, 10⁹ URLs)
// until it knows N URLs, with everything that could bend as the frontier
// outgrows RAM sampled over time.
//
// [Run] starts "petrel testweb --lazy" as its own process (pages rendered
// on request, names from its DNS server on loopback) and "petrel crawl"
// against it with WARC on and small politeness delays. Every
// [Options.Every] it samples the crawl from outside: the agent's
// state/progress.json (pages, URLs known, ready and queued URLs, RAM and
// disk parts of the visit-state queues, Go heap, sieve flush durations,
// checkpoint pauses, fetcher waits), /proc (RSS, CPU of the crawler and of
// the web) and the crawl directory (bytes on disk by component: sieve
// store, sieve buffers, ready queue, virtualizer, WARC, checkpoints,
// other). When N URLs are known it asks for a checkpoint (SIGUSR1),
// records its pause, and either stops the crawl (SIGINT, timing the clean
// stop) or, with [Options.Recover], kills it (SIGKILL) and starts it again
// on the same directory, timing the recovery until the first page fetched
// after it.
//
// The report ([Report]) has the samples and a summary (the rates over the
// second and the last tenth of the run, peak RSS, disk per known URL,
// checkpoint pauses); it is written as JSON, as a table and as an SVG plot
// of four panels over time.
//
// Invariants: every child runs in its own process group with a
// parent-death signal and is killed with its group when the run ends;
// samples are bounded ([maxSamples]); the run is bounded in time
// ([Options.TimeBound]); nothing leaves the loopback addresses.
package benchscale
