// Package frontier decides what the crawl fetches next, and when.
//
// It follows BUbiNG's Frontier (P. Boldi, A. Marino, M. Santini, S. Vigna,
// "BUbiNG: Massive Crawling for the Masses", ACM Transactions on the Web
// 12(2), 2018, and the Javadoc of it.unimi.dsi.law.bubing.frontier.Frontier).
// A URL goes through four states: unknown, waiting (in the sieve), ready (out of
// the sieve, in the ready queue or a visit state), visited.
//
//	Enqueue(All): URL cache → Router → per-key budget → sieve ──flush──► ready queue (disk FIFO)
//	scheduler: ready queue → visit state (per politeness key) → DNS → workbench entry (per IP)
//	scheduler ──Task──► fetchers ──Outcome──► scheduler (release with new times)
//
// A URL travels as a record: its Meta (meta.go: hop path, depth, seed, via;
// versioned), then the URL. The Router (router.go) says which agent of a
// crawl owns each URL and address; alone, an agent owns everything.
//
// The scheduler (Run) is one goroutine that owns the visit states and the
// stages, each a type in its own file with its invariants at the top: the
// distributor (distributor.go: ready queue → visit states), the DNS stage
// (dns.go), the robots table (robots.go) and the workbench (workbench.go);
// dispatch.go decides the next task, release.go takes tasks back. They need
// no locks. Everything else talks to them through channels served by the
// scheduler between two of its steps: checkpoints (checkpoint.go), live
// settings, pause and resume (control.go) and inspection (inspect.go).
// Every time it compares is read from its Clock (clock.go), which tests
// replace. Fetchers receive Tasks on the channel returned by Todo and hand each
// one back with Done. Everything the scheduler does not own (the sieve, the
// URL cache, the ready queue, the per-key counters, the statistics) is safe
// for concurrent use, because Enqueue runs on many parser goroutines.
//
// Most politeness keys of a large crawl are idle (nothing queued, in flight
// or waited for): such a visit state settles into an idle key of 32 bytes
// keyed by a hash of its key (idlekey.go), keeping its next fetch time, its
// delay, its budget used and its host's address, and is made again when a
// record of the key arrives. So the RAM of the per-host structures follows
// the keys with work (bounded by the workbench's budget), not the hosts met.
//
// Politeness invariants, kept by the scheduler for every request (robots.txt
// included):
//   - at most ParallelPerKey requests in flight per visit state and
//     ParallelPerIP per workbench entry (both 1 by default);
//   - the next request to a visit state starts no earlier than the end of the
//     previous response plus the key's delay (HostDelay, raised by robots.txt
//     Crawl-delay, by Retry-After and by the adaptive DelayFactor), and the
//     next request to an IP no earlier than the end plus IPDelay.
//
// A host that cannot be reached (Unreachable) keeps its URLs: its visit
// state waits with a growing delay, and is purged only after HostDownGiveUp
// (hostdown.go).
//
// Every delay is bounded (MaxWait) and every sum of a time and a delay
// saturates (later, clock.go), so that no delay can carry a next fetch time
// past the end of the clock and around to the past.
//
// Nothing found is lost silently: a URL the frontier gives up (its visit
// state purged, its host dead, down too long or blocked, its tries used
// up, its key over budget) is counted
// by its reason and told to Config.Dropped — the scheduler's drops from
// the drop log's own goroutine (droplog.go), bounded, so that a purge of
// 10⁵ queued URLs hands a queue over instead of stalling the scheduler;
// what the drop log cannot take is counted in DropsUnlogged.
//
// The frontier knows nothing of HTTP: a Task names a URL and an address, an
// Outcome says when the exchange ended and how it went.
//
// The sieve is flushed when its buffer fills, and earlier (flushWanted in
// scheduler.go) when the workbench runs short of URLs, when the fetchers
// wait while the sieve holds keys that have no work in the workbench (an
// approximate set of the keys enqueued since the last flush,
// backlogkeys.go), or when its backlog reaches half of what was flushed.
//
// Termination: the crawl is over when the sieve has nothing unflushed, the
// ready queue is empty, no visit state holds a URL, no fetch is in flight and
// no work that may still enqueue URLs is outstanding (see Acquire).
package frontier
