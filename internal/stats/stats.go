package stats

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Crawl is the set of counters of one running crawl. The zero value is
// ready to use; every field may be updated concurrently.
//
// Each statistic is declared here once, with its kind: a counter
// (cumulative over the runs of a crawl: saved in state/stats.json and
// restored at a resume) or, tagged `stat:"gauge"`, a gauge (a value of
// now, recomputed by the running crawl, never restored). Its field name is
// its name in stats.json: renaming one means adding the old name to
// renamed, under a new Version, so that a saved file is migrated instead of
// losing the counter.
type Crawl struct {
	// Frontier.
	Enqueued            atomic.Int64 // URLs offered to the frontier (seeds, links, redirects)
	OutOfScope          atomic.Int64 // refused by the scope rule
	Filtered            atomic.Int64 // refused by other URL rules (scheme, ...)
	FilteredSchedule    atomic.Int64 // refused by the schedule filter (before the frontier)
	FilteredFetch       atomic.Int64 // refused by the fetch filter (before the request)
	FilteredParse       atomic.Int64 // responses the parse filter kept from being parsed
	FilteredFollow      atomic.Int64 // pages whose links the follow filter kept from being followed
	FilteredStore       atomic.Int64 // responses the store filter kept out of the WARC files
	SkippedUnlogged     atomic.Int64 // refusals not written to logs/skipped.jsonl: past its total cap (counted at each stop)
	FailedUnrecorded    atomic.Int64 // URLs given up after failures not written to state/failed: past its cap (counted at each stop)
	CutLength           atomic.Int64 // refused: longer than --max-url-length
	CutRedirects        atomic.Int64 // refused: redirect chain longer than --max-redirects allows
	CutDepth            atomic.Int64 // refused: more than --max-depth links from a seed
	CutEmbedHops        atomic.Int64 // requisites not followed: named by a document beyond --max-embed-hops (HTML) or --max-css-hops (a style sheet)
	CutRepeatedSegment  atomic.Int64 // refused: a path segment repeated more than --max-segment-repeats times
	CutAtDispatch       atomic.Int64 // queued URLs refused at dispatch by a scope or limit narrowed after they were queued
	OverBudget          atomic.Int64 // refused: the key already holds --max-urls-per-host URLs (a repeat the URL cache catches counts as a cache hit)
	CacheHits           atomic.Int64 // duplicates caught by the URL cache before the sieve
	CacheLookups        atomic.Int64
	SieveEnqueued       atomic.Int64 // keys handed to the sieve
	SieveNew            atomic.Int64 // keys the sieve found new (URLs known)
	SieveFlushes        atomic.Int64
	SieveBuffered       atomic.Int64 `stat:"gauge"` // keys offered to the sieve since its last flush, not yet checked against what it knows
	Ready               atomic.Int64 `stat:"gauge"` // URLs currently in the ready queue
	Queued              atomic.Int64 `stat:"gauge"` // URLs currently held by visit states
	QueuedBytes         atomic.Int64 `stat:"gauge"` // RAM bytes of visit-state queues
	VisitStates         atomic.Int64 `stat:"gauge"` // visit states known
	ActiveKeys          atomic.Int64 `stat:"gauge"` // visit states with URLs to fetch
	IPEntries           atomic.Int64 `stat:"gauge"` // workbench entries
	InFlight            atomic.Int64 `stat:"gauge"` // fetches in flight
	RobotsDenied        atomic.Int64 // URLs not fetched because robots.txt disallows them
	RobotsHeld          atomic.Int64 `stat:"gauge"` // robots.txt states held in RAM
	RobotsLoaded        atomic.Int64 // robots.txt states read back from the robots store
	RobotsStoreErrors   atomic.Int64 // robots store reads and writes that failed (the robots.txt is fetched again)
	AddressRefused      atomic.Int64 // URLs not fetched: the address guard refused the host's address
	DNSFailures         atomic.Int64 // visit states whose name did not resolve
	DNSLookups          atomic.Int64 // host names sent to the DNS stage's workers (first resolutions, retries, refreshes, names forgotten and met again)
	HostsHeld           atomic.Int64 `stat:"gauge"` // host names the DNS stage holds
	HostsForgotten      atomic.Int64 // host names the DNS stage forgot (no visit state of theirs, nothing waiting)
	AddressChanges      atomic.Int64 // hosts found at another address when resolved again (--dns-refresh)
	BrokenKeys          atomic.Int64 // visit states purged as broken (BUbiNG's brokenVisitStates)
	PurgedURLs          atomic.Int64 // URLs dropped with a broken visit state
	HostDownWaits       atomic.Int64 // tries that could not reach their host (refused, connect timeout): its key waited, its URLs kept
	DropsUnlogged       atomic.Int64 // URLs dropped (counted by their reason) without a crawl.log line: over the drop log's bounds, or left at the stop
	Retries             atomic.Int64 // fetch attempts repeated after a failure or 5xx
	PagesDispatched     atomic.Int64 // page fetches counted against --max-urls, over the runs (kept by the frontier's scheduler)
	FetcherWaitNano     atomic.Int64 // total time fetchers waited for work
	Checkpoints         atomic.Int64 // checkpoints taken
	CheckpointErrors    atomic.Int64 // checkpoints that failed
	CheckpointPauseNano atomic.Int64 `stat:"gauge"` // how long the last checkpoint stopped the scheduler
	VirtualizedTotal    atomic.Int64 // URLs ever moved to disk by the virtualizer
	Virtualized         atomic.Int64 `stat:"gauge"` // URLs of visit-state queues held on disk
	RequiredFront       atomic.Int64 `stat:"gauge"` // visit states the distributor keeps active
	FetcherWaits        atomic.Int64
	Runs                atomic.Int64 // runs of the crawl in its directory (a resume is a run)
	Fetchers            atomic.Int64 `stat:"gauge"` // fetching goroutines
	Parsers             atomic.Int64 `stat:"gauge"` // parsing goroutines

	// Cluster (zero for a single agent).
	ClusterSent          atomic.Int64 // URLs routed to the agent owning their key
	ClusterReceived      atomic.Int64 // URLs received as their key's owner
	ClusterForwarded     atomic.Int64 // of those, URLs of keys this agent no longer owns (a view changed), sent on to their owner
	ClusterReadySent     atomic.Int64 // new URLs handed to the agent fetching from their address
	HandedOverKeys       atomic.Int64 // visit states moved to the new owner of their address at a view change
	HandedOverURLs       atomic.Int64 // queued URLs handed to the new owner of their address at a view change
	HandedOverRobots     atomic.Int64 // robots.txt rules handed to the new holder of a key with its URLs
	TakenOverRobots      atomic.Int64 // robots.txt rules installed from a hand-over (no fetch of them here)
	HandedOverSeen       atomic.Int64 // seen-set entries handed to the new owner of their key at a view change
	ReceivedSeen         atomic.Int64 // seen-set entries received as a key's new owner
	ClusterReadyReceived atomic.Int64 // new URLs received as their address's owner
	ZombieRefused        atomic.Int64 // fetches handed back unbegun while the zombie guard was closed
	ReturnKnownDropped   atomic.Int64 // URLs handed back at a return after a death that this agent knew before its death
	ReturnFetchedDropped atomic.Int64 // URLs queued here that an interim owner fetched while this agent was declared dead, dropped at its return
	ZombieCut            atomic.Int64 // page fetches in flight cut by the zombie guard closing (fetched again later)
	InterimAgainDropped  atomic.Int64 // ready URLs of keys taken over from a dead agent sent here again by their interim owner, or sent again by a restarted agent, dropped

	// Fetching.
	Fetched       atomic.Int64 // responses received (pages, not robots.txt)
	RobotsFetched atomic.Int64 // robots.txt responses received
	TLSVerified   atomic.Int64 // https responses whose certificate verified
	TLSUnverified atomic.Int64 // https responses received although their certificate did not verify (--tls-verify record)
	TLSRefused    atomic.Int64 // fetches refused because the certificate did not verify (--tls-verify strict)
	ConnsOpened   atomic.Int64 // connections dialled for a request that got a response
	ConnsReused   atomic.Int64 // requests that went on a kept-alive connection
	TLSFull       atomic.Int64 // TLS handshakes in full, of the connections opened
	TLSResumed    atomic.Int64 // TLS handshakes that resumed a session of the host (a ticket), of the connections opened
	H2Conns       atomic.Int64 // HTTP/2 connections opened (the server chose h2 by ALPN), of the connections opened
	H2Streams     atomic.Int64 // requests that went over HTTP/2, one stream each
	FetchErrors   atomic.Int64 // fetches that failed at the network level
	Timeouts      atomic.Int64
	Truncated     atomic.Int64 // bodies cut at --max-body or by a timeout
	BytesReceived atomic.Int64 // bytes of responses as transferred
	Status1xx     atomic.Int64
	Status2xx     atomic.Int64
	Status3xx     atomic.Int64
	Status4xx     atomic.Int64
	Status5xx     atomic.Int64
	StatusOther   atomic.Int64
	ContentText   atomic.Int64 // by indicated content type, as BUbiNG counts archetypes
	ContentImage  atomic.Int64
	ContentApp    atomic.Int64
	ContentOther  atomic.Int64

	// Parsing and storing.
	Parsed            atomic.Int64 // HTML pages parsed for links
	LinksFound        atomic.Int64 // links extracted (outdegree sum)
	LinksDropped      atomic.Int64 // links beyond --max-links
	EmbedsFound       atomic.Int64 // page requisites extracted from pages and style sheets
	EmbedsDropped     atomic.Int64 // requisites beyond --max-links (a cap of their own)
	StyleSheets       atomic.Int64 // style sheets parsed for requisites
	EmbedLinksSkipped atomic.Int64 // links of documents fetched as requisites, not followed
	SitemapsRead      atomic.Int64 // sitemaps and sitemap indexes read (--sitemaps)
	SitemapURLs       atomic.Int64 // URLs listed by the sitemaps read, offered as links
	SitemapsMalformed atomic.Int64 // sitemaps that are not sound sitemap XML (their URLs before the fault are kept)
	SitemapsOversized atomic.Int64 // sitemaps over 50,000 URLs or 50 MiB, or cut at --max-body (read up to the bound)
	SitemapsNested    atomic.Int64 // sitemap indexes named by an index, not followed
	CutSitemapNested  atomic.Int64 // sitemaps those nested indexes name, not read
	NoFollow          atomic.Int64 // pages whose links were not followed (meta robots / X-Robots-Tag)
	Duplicates        atomic.Int64 // payloads identical to one already stored (revisit records)
	PriorRevisits     atomic.Int64 // of those, payloads an earlier crawl stored (--dedup-index)
	PriorBytes        atomic.Int64 // bytes of their responses not stored (the bodies)
	TextDuplicates    atomic.Int64 // pages whose normalised-text digest was seen on the host
	NearDuplicates    atomic.Int64 // pages whose SimHash is within --near-dup-distance of a recent page of the host
	RobotsRedirects   atomic.Int64 // robots.txt redirect hops followed (same scheme+authority)
	Stored            atomic.Int64 // response records written
	WARCBytes         atomic.Int64 // compressed bytes written to WARC files
	StoreErrors       atomic.Int64
	Redirects         atomic.Int64

	// Operations.
	Blocked       atomic.Int64 // URLs refused or dropped because the blocklist names their host or address
	BlockedQueued atomic.Int64 // of those, URLs that were already queued when their entry was added
}

// Snapshot is a copy of every counter of a Crawl at one moment, keyed by
// field name.
type Snapshot map[string]int64

// Snapshot copies the counters.
func (c *Crawl) Snapshot() Snapshot {
	s := make(Snapshot, 64)
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if a, ok := v.Field(i).Addr().Interface().(*atomic.Int64); ok {
			s[t.Field(i).Name] = a.Load()
		}
	}
	return s
}

// Restore sets the counters from a snapshot (used when a crawl resumes),
// migrating names renamed since the snapshot's Version; gauges are left
// alone, since they are recomputed.
func (c *Crawl) Restore(s Snapshot) {
	s = migrate(s)
	v := reflect.ValueOf(c).Elem()
	for name, val := range s {
		f, ok := v.Type().FieldByName(name)
		if !ok || f.Tag.Get("stat") == "gauge" {
			continue
		}
		if a, ok := v.FieldByIndex(f.Index).Addr().Interface().(*atomic.Int64); ok {
			a.Store(val)
		}
	}
}

// Version is the version of the names in a Snapshot, saved with it as the
// entry "StatsVersion". A snapshot without one is version 1.
const Version = 1

// renamed lists, for each version, the names it changed: old → new.
// Restore applies them in order to an older snapshot.
var renamed = map[int64]map[string]string{}

// migrate renames an older snapshot's entries to the current names.
func migrate(s Snapshot) Snapshot { return migrateTo(s, Version, renamed) }

func migrateTo(s Snapshot, version int64, renamed map[int64]map[string]string) Snapshot {
	from := max(s["StatsVersion"], 1)
	if from >= version {
		return s
	}
	out := make(Snapshot, len(s))
	for k, v := range s {
		out[k] = v
	}
	for ver := from + 1; ver <= version; ver++ {
		for old, cur := range renamed[ver] {
			if v, ok := out[old]; ok {
				out[cur] += v
				delete(out, old)
			}
		}
	}
	return out
}

// IsGauge reports whether the statistic of that name is a gauge.
func IsGauge(name string) bool {
	f, ok := reflect.TypeFor[Crawl]().FieldByName(name)
	return ok && f.Tag.Get("stat") == "gauge"
}

// CountStatus counts one HTTP status code in its class.
func (c *Crawl) CountStatus(code int) {
	switch code / 100 {
	case 1:
		c.Status1xx.Add(1)
	case 2:
		c.Status2xx.Add(1)
	case 3:
		c.Status3xx.Add(1)
	case 4:
		c.Status4xx.Add(1)
	case 5:
		c.Status5xx.Add(1)
	default:
		c.StatusOther.Add(1)
	}
}

// CountContentType counts one indicated content type in its family.
func (c *Crawl) CountContentType(ct string) {
	switch {
	case hasPrefixFold(ct, "text"):
		c.ContentText.Add(1)
	case hasPrefixFold(ct, "image"):
		c.ContentImage.Add(1)
	case hasPrefixFold(ct, "application"):
		c.ContentApp.Add(1)
	default:
		c.ContentOther.Add(1)
	}
}

func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != p[i] {
			return false
		}
	}
	return true
}

// WriteJSON writes the snapshot as one JSON object, with its
// StatsVersion.
func (s Snapshot) WriteJSON(w io.Writer) error {
	out := make(Snapshot, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["StatsVersion"] = Version
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Errors is the number of fetches that went wrong in any way.
func (s Snapshot) Errors() int64 {
	return s["FetchErrors"] + s["Status5xx"] + s["StoreErrors"]
}

// Line formats the one-line progress report: pages, pages/s, bytes/s, URLs
// known, hosts active, errors, since the previous snapshot prev taken dt
// earlier.
func Line(cur, prev Snapshot, dt time.Duration) string {
	sec := dt.Seconds()
	if sec <= 0 {
		sec = 1
	}
	pages := cur["Fetched"]
	rate := float64(pages-prev["Fetched"]) / sec
	bps := float64(cur["BytesReceived"]-prev["BytesReceived"]) / sec
	line := fmt.Sprintf("pages %d (%s/s) %s/s | known %d%s ready %d queued %d | hosts active %d, ips %d | in flight %d | dup %d | errors %d",
		pages, rateOf(rate), Human(bps), cur["SieveNew"], unchecked(cur["SieveBuffered"]), cur["Ready"], cur["Queued"],
		cur["ActiveKeys"], cur["IPEntries"], cur["InFlight"], cur["Duplicates"]+cur["TextDuplicates"], cur.Errors())
	if x := cur["ClusterSent"] + cur["ClusterReceived"] + cur["ClusterReadySent"] + cur["ClusterReadyReceived"]; x > 0 {
		line += fmt.Sprintf(" | sent %d recv %d fwd %d handed %d/%d",
			cur["ClusterSent"], cur["ClusterReceived"], cur["ClusterForwarded"], cur["ClusterReadySent"], cur["ClusterReadyReceived"])
	}
	return line
}

// rateOf shows a rate per second: with one decimal below 10, so that half
// a page a second does not read 0.
func rateOf(r float64) string {
	if r < 10 {
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// unchecked shows the keys waiting in the sieve's buffer beside the URLs
// known, which count only what its flushes found new: "" for none.
func unchecked(n int64) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d in the sieve, not yet checked)", n)
}

// Run is one run of a crawl, for its Summary.
type Run struct {
	Head       string   // first line: how the run ended
	Next       string   // last line: what to do next ("" for none)
	More       string   // lines before Next ("" for none)
	Start, End Snapshot // the counters at the start of the run and at its end (the crawl's totals)
	Elapsed    time.Duration
	Fetchers   int
}

// Summary is the end-of-run report: this run's pages and rate, then the
// crawl's totals (over every run in its directory).
func Summary(r Run) string {
	s, d := r.End, func(k string) int64 { return r.End[k] - r.Start[k] }
	rate := float64(d("Fetched")) / r.Elapsed.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, `%s
  this run           %d pages (%.1f/s), robots.txt %d, %s received
  crawl total        %d pages over %d runs; the counts below are the crawl's
  status             1xx %d  2xx %d  3xx %d  4xx %d  5xx %d  other %d
  content            text %d  image %d  application %d  other %d
  URLs               known %d, out of scope %d, over budget %d, robots-denied %d, filtered %d, address refused %d
  traps cut          length %d, redirects %d, depth %d, repeated segment %d
  filters refused    schedule %d, fetch %d, parse %d, follow %d, store %d
  links              found %d, dropped %d, redirects %d, nofollow pages %d
  requisites         found %d, dropped %d (over --max-links %d, beyond the embed hop limits %d), style sheets %d
  sitemaps           read %d, URLs %d, malformed %d, oversized %d, nested indexes %d (their sitemaps not read %d)
  duplicates         payload %d (revisit records; %d of an earlier crawl's payloads, %s not stored), text %d, near %d
  failures           network %d, timeouts %d, truncated %d, retries %d, DNS %d, broken hosts %d (URLs purged %d)
  https              certificate verified %d, not verified %d (fetched anyway), refused %d
  connections        opened %d (TLS: %d full handshakes, %d from a session ticket), reused %d; HTTP/2: %d connections, %d streams
  WARC               %d response records, %s compressed
  URL cache          %d hits of %d lookups
  checkpoints        %d (last pause %s)
  fetchers waited    %s`,
		r.Head, d("Fetched"), rate, d("RobotsFetched"), Human(float64(d("BytesReceived"))),
		s["Fetched"], max(s["Runs"], 1),
		s["Status1xx"], s["Status2xx"], s["Status3xx"], s["Status4xx"], s["Status5xx"], s["StatusOther"],
		s["ContentText"], s["ContentImage"], s["ContentApp"], s["ContentOther"],
		s["SieveNew"], s["OutOfScope"], s["OverBudget"], s["RobotsDenied"], s["Filtered"], s["AddressRefused"],
		s["CutLength"], s["CutRedirects"], s["CutDepth"], s["CutRepeatedSegment"],
		s["FilteredSchedule"], s["FilteredFetch"], s["FilteredParse"], s["FilteredFollow"], s["FilteredStore"],
		s["LinksFound"], s["LinksDropped"], s["Redirects"], s["NoFollow"],
		s["EmbedsFound"], s["EmbedsDropped"]+s["CutEmbedHops"], s["EmbedsDropped"], s["CutEmbedHops"], s["StyleSheets"],
		s["SitemapsRead"], s["SitemapURLs"], s["SitemapsMalformed"], s["SitemapsOversized"], s["SitemapsNested"], s["CutSitemapNested"],
		s["Duplicates"], s["PriorRevisits"], Human(float64(s["PriorBytes"])), s["TextDuplicates"], s["NearDuplicates"],
		s["FetchErrors"], s["Timeouts"], s["Truncated"], s["Retries"], s["DNSFailures"], s["BrokenKeys"], s["PurgedURLs"],
		s["TLSVerified"], s["TLSUnverified"], s["TLSRefused"],
		s["ConnsOpened"], s["TLSFull"], s["TLSResumed"], s["ConnsReused"], s["H2Conns"], s["H2Streams"],
		s["Stored"], Human(float64(s["WARCBytes"])),
		s["CacheHits"], s["CacheLookups"],
		s["Checkpoints"], time.Duration(s["CheckpointPauseNano"]).Round(time.Microsecond),
		idle(d("FetcherWaitNano"), d("FetcherWaits"), r.Elapsed, r.Fetchers))
	if r.More != "" {
		b.WriteString("\n" + r.More)
	}
	if r.Next != "" {
		b.WriteString("\n" + r.Next)
	}
	return b.String()
}

// idle says how much of the fetchers' time this run went into waiting
// for work, and what that means.
func idle(waitNano, waits int64, elapsed time.Duration, fetchers int) string {
	if fetchers <= 0 || elapsed <= 0 {
		return "-"
	}
	share := 100 * float64(waitNano) / (float64(fetchers) * float64(elapsed))
	mean := time.Duration(0)
	if waits > 0 {
		mean = time.Duration(waitNano) / time.Duration(waits)
	}
	return fmt.Sprintf("%.0f%% of the time for a host's politeness delay to pass (%s a wait on average); high when few hosts are left, not a fault", min(share, 100), Words(mean))
}

// Words says a duration as a person reads it: "3 min 23 s", "1.5 s",
// "40 ms", "2 h 5 min".
func Words(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
		return unitPair(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "min")
	case d >= time.Minute:
		d = d.Round(time.Second)
		return unitPair(int64(d/time.Minute), "min", int64(d%time.Minute/time.Second), "s")
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// unitPair is "a ua b ub", or "a ua" when b is 0.
func unitPair(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d %s", a, ua)
	}
	return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
}

// Human formats b bytes with a binary unit (B, KiB, MiB, GiB).
func Human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
