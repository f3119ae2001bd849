// Package revisit keeps a crawl fresh: the schedule of a revisit crawl
// (petrel crawl --revisit), which fetches every page again when it is
// due, through the frontier's politeness, with a conditional GET.
//
// Files: state.go (a URL's State, its encoding and its change-rate
// estimate), schedule.go (the Schedule: its file, visits, failures),
// claims.go (Claim and Unclaim: a fetch's hold on a URL, in RAM and on
// disk), recovery.go (the claims a dead process left, settled from the
// WARC files), warcnames.go (record IDs and payload digests between
// their WARC spelling and a State's bytes), later.go (first fetches
// committed many to a transaction), move.go (entries moved between the
// schedules of a cluster's agents), issue.go (Run: due URLs to the
// frontier), policy.go (the policies and the change-rate optimum),
// hints.go (the sitemaps' changefreq and lastmod), figures.go (counters
// and the estimated freshness), settings.go (the settings table).
//
// # The schedule on disk
//
// One bbolt file, state/revisit/schedule.db, of five buckets:
//
//	u  URL → State (about 130 bytes and the ETag: Meta, due time, the
//	   policy's interval, the change history, ETag, Last-Modified, the
//	   payload digest, the record ID and date of the last full capture)
//	d  due time (8 bytes, big-endian) + URL → nothing: the URLs not issued, in due order
//	i  URL → issue number (8 bytes), then, once a fetch claimed it, the
//	   claim's time (8 bytes, Unix ns): the URLs issued to the frontier, not yet visited
//	m  the last issue number; the rate histogram and the freshness sum (saved by Sync)
//	h  URL → a sitemap's changefreq period (8 bytes), for URLs not yet visited (at most MaxHints)
//
// So a URL costs about 150 bytes plus twice its length in keys, before the
// B+tree's overhead (pages about half to fully filled): BenchmarkScheduleVisited
// measures about 570 bytes of file per URL of 60 bytes. The file is memory-mapped, not loaded: the Go
// heap holds a histogram of 160 counters, the claims of the fetches in
// flight (at most Config.MaxIssued) and counters, whatever the number of
// URLs; while Open settles the claims a dead process left, those claims
// and the visits found of them (as many at most). Writes go to the operating system at each commit (no fsync: they
// survive the death of the process); Sync, called at each checkpoint and
// at Close, makes them durable against the machine's. A revisit costs
// three transactions: its issue (many to one), its claim and its visit
// (each through bbolt's Batch, shared with concurrent ones).
//
// A first fetch (Scheduled) is held with others and committed in one
// transaction when laterBatch are held, within laterEvery by Run, and at
// every Sync (each checkpoint): no due time depends on it, and a crash
// loses only what the crawl fetches again from its last checkpoint. A
// revisit (Visited) is committed before the call returns.
//
// # Exactly once per due time
//
// A due URL is moved, in one transaction, from the due index to the issued
// set with the next issue number, then handed to the frontier (Config.Issue)
// as a record whose hop path ends in V (frontier.HopRevisit). It goes
// through the frontier's politeness like any URL (the sieve is bypassed by
// design: the frontier takes it as a ready URL). Before a revisit task is
// fetched, Claim checks that its URL is still issued and not held by
// another fetch, and commits the claim's time beside its issue number;
// after the response is stored, Visited moves it, in one transaction, from
// the issued set back to the due index at its next due time. A task whose
// URL is no longer issued is a duplicate for a due time already done: it
// is not fetched. Hence:
//   - a clean stop: the frontier saves its queue, revisit tasks included;
//     the issued set is kept; nothing is issued again (a fetch the stop
//     cut is unclaimed: its claim's time is cleared);
//   - a crash: Open (Config.WARCDir, the files repaired) looks, for each
//     URL whose claim is recorded, for a response or revisit record of it
//     dated at or after the claim (only the claimed fetch can have written
//     one: the URL stayed issued since). Found, the visit is committed from
//     the record (its status, payload digest, ETag, Last-Modified, record
//     ID and date), as Visited would have; not found, the claim is cleared
//     and the URL stays issued. Then Run (Config.Reissue) issues the whole
//     issued set again, as the frontier went back to its checkpoint, which
//     lacks what was issued since; the duplicates of what the checkpoint
//     holds, or of what was visited since (committed before the crash or
//     from its record), are refused by Claim.
//
// What remains: a request in flight when the process dies (sent, its
// response not yet stored) has no record; its URL is fetched again after
// the restart, so the server sees two requests for the due time and the
// archive holds one record. A power loss or an operating-system crash
// loses the schedule's writes since its last Sync and the WARC files'
// since their last fsync, the ones apart from the others: a revisit done
// since may be done again (two records, when its record survived and its
// commit did not), none is lost (each URL is back due or issued). A wall
// clock set back between a claim and its request dates the record before
// the claim: that revisit is done again.
//
// # Policies
//
// uniform: every URL every N/Budget (N URLs scheduled). heritrix: the
// WaitEvaluator's rule, the interval ÷1.5 when the page changed, ×1.5
// when not. stormcrawler: the AdaptiveScheduler's rule, halfway to Min
// when changed, ×1.5 when not. Both start at 24×Min (their one day for a
// minimum of one hour), and stay within [Min, Max]. change-rate: each
// URL's change rate λ is estimated from its history (State.Rate: Cho and
// Garcia-Molina's estimator from changed/unchanged visits, or, where
// Last-Modified dates the changes, the changes over the time the URL is
// known to have stayed unchanged, each change's from its Last-Modified
// to the visit; both shrunk toward a prior of one change a day, so that
// a page found unchanged once is not taken for one that never changes;
// a Last-Modified seen to move without a change times nothing); the
// interval maximises the expected freshness of the whole schedule for
// the budget: with Poisson changes and a visit every 1/f, a page's
// freshness is (f/λ)(1−e^(−λ/f)), and at the optimum every page's
// marginal freshness per visit is the same μ, which gives each page's
// interval from its λ (Rates.Interval); μ is solved by bisection so that
// the visits a second of the rate histogram sum to the budget. A page
// changing too often for μ is visited every Max only. An interval at most
// doubles from one visit to the next, so that a URL one misleading visit
// sent toward Max is seen again soon, unless two changes dated by
// Last-Modified put it at Max (given up, or changing too seldom for a
// shorter interval): then it goes there at once.
package revisit
