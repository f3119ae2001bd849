package frontier

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
	"github.com/petrel-crawler/petrel/internal/notify"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// Sieve is the exactly-once filter under the frontier (BUbiNG's
// AbstractSieve): Enqueue offers a key, Flush pours every new key enqueued
// so far into the receiver (the frontier), Close flushes and ends it.
// Enqueue copies what it keeps of key: the frontier reuses its buffers.
type Sieve interface {
	Enqueue(key []byte) (flushed bool, err error)
	Flush() error
	Close() error
}

// ReadyQueue is the FIFO of URLs out of the sieve waiting for their visit
// state (BUbiNG's readyURLs). It must be safe for concurrent use.
type ReadyQueue interface {
	Push(rec []byte) error
	Pop(dst []byte) (rec []byte, ok bool, err error)
	Len() int64
}

// Virtualizer stores many FIFO queues of records on disk, one per visit
// state id (BUbiNG's WorkbenchVirtualizer over ByteArrayDiskQueues).
type Virtualizer interface {
	Enqueue(id uint64, rec []byte) error
	DequeueN(id uint64, n int) ([][]byte, error)
	Remove(id uint64) (int64, error)
	// The frontier's drop log reads and removes the queue of a purged
	// visit state on a goroutine of its own (dropLog), while the
	// scheduler uses other ids: a Virtualizer must be safe for concurrent
	// use.
	//
	// Snapshot calls fn for every record held, without removing any (for
	// checkpoints), in the order of the files (sequential I/O): FIFO
	// within an id only until a compaction has moved some of its records.
	Snapshot(fn func(id uint64, rec []byte) error) error
}

// URLCache is the approximate cache of recently enqueued URL fingerprints.
type URLCache interface {
	Seen(hash uint64) bool
	// Touch reads the part of the cache that hash maps to, changing
	// nothing: a Seen of hash soon after finds it in the processor's
	// cache (see EnqueueAll).
	Touch(hash uint64)
}

// Resolver turns a host name into addresses (the DNS stage).
type Resolver interface {
	Lookup(ctx context.Context, host string) ([]netip.Addr, error)
}

// Config is what New needs: the crawl's settings, the frontier's own
// tuning, and its collaborators.
type Config struct {
	Settings

	MaxFailures int           // consecutive failed URLs (retries exhausted) before a key is purged as broken
	DNSRetries  int           // failed resolutions before a key is purged as broken
	DNSRefresh  time.Duration // a resolved host is resolved again this long after (0: never; readdress.go)
	// Moved, if set, is called by the scheduler when a visit state moves to
	// the new address of its host, nothing of it in flight: keep-alive
	// connections dialled to the old address must not carry its next
	// requests (the agent closes the fetcher's idle connections).
	Moved       func(host string, from, to netip.Addr)
	DNSWorkers  int           // concurrent resolutions
	MinFlushGap time.Duration // minimum time between two forced sieve flushes
	// Cuts refuse queued URLs at dispatch (see Cuts; zero: none).
	Cuts Cuts

	// OpenSieve opens the sieve under the frontier, whose new flows go to
	// the receiver it is given. New calls it once, after reading Counts:
	// a sieve may deliver flows while it opens (keys it recovers from its
	// files), and each is counted against its key's budget as it comes.
	// Nil: a frontier without a sieve (its ready queue is filled another
	// way; Enqueue must not be called).
	OpenSieve func(*Receiver) (Sieve, error)
	// Counts, when set, holds the per-key URL counts of an earlier run
	// (what SaveCounts wrote), read by New before the sieve opens.
	Counts io.Reader
	// Handovers, when set, is the keys' hand-over state of an earlier run
	// (what HandoverKeys returned, or a checkpoint's
	// HandoverCheckpointSink got): see handoverkeys.go.
	Handovers []HandoverKey
	Cache     URLCache
	Hash      func([]byte) uint64
	Ready     ReadyQueue
	// Virtualizer holds the tails of visit-state queues on disk when the
	// workbench is over budget (nil: everything stays in RAM).
	Virtualizer Virtualizer
	// RobotsStore keeps the robots.txt states that leave RAM beyond
	// Settings.RobotsCache (robots.go); nil: every state stays in RAM.
	RobotsStore RobotsStore
	Resolver    Resolver
	// Guard returns an error when an address must not be dialled.
	Guard func(netip.Addr) error
	// Clock is the frontier's time (nil: the system clock).
	Clock Clock
	// Router says which agent owns each URL and address (nil: Local).
	Router Router
	// Until, when set, keeps Run going when nothing is left to do: an idle
	// frontier waits for more work (AcceptReady, Enqueue) or for Until to
	// close, and only then returns nil (a crawl of several agents ends
	// when all of them are idle together, not when one is).
	Until <-chan struct{}
	// RobotsDenied, when set, is told of each queued URL that robots.txt
	// disallows (the URL and its Meta), after it is counted, for the crawl
	// log. It is called on the scheduler
	// goroutine and must return quickly.
	RobotsDenied func(url string, m Meta)
	// Dropped, when set, is told of each URL the frontier gives up
	// without fetching it (DropReason), after it is counted: the URLs of
	// a visit state purged or emptied by Drop, those that reach a purged
	// visit state or a dead host later, those over their key's budget.
	// The scheduler's drops are told on a goroutine of the frontier's
	// (bounded: see dropLog; URLs past its bounds are counted in
	// DropsUnlogged instead), the over-budget ones on the goroutine that
	// offered the URL; it must be safe for concurrent use.
	Dropped func(url string, m Meta, why DropReason)
	// FetchedElsewhere, when set, reports whether a queued page URL that
	// comes up for its first dispatch was fetched by another agent while
	// this one was away (an agent declared dead and back): it is then
	// dropped unfetched, with no delay charged, and not counted against
	// the key's budget. It is called on the scheduler goroutine, once per
	// URL, and must return quickly.
	FetchedElsewhere func(url string) bool
	// Stats receives the frontier's counters. Its PagesDispatched, as
	// restored by a resume, is where the count of page fetches held to
	// MaxURLs starts: the limit is the crawl's, over its runs.
	Stats  *stats.Crawl
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.ParallelPerKey <= 0 {
		c.ParallelPerKey = 1
	}
	if c.ParallelPerIP <= 0 {
		c.ParallelPerIP = 1
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = 30 * time.Second
	}
	if c.CrawlDelayCap <= 0 {
		c.CrawlDelayCap = 10 * time.Second
	}
	if c.HostDownBackoff <= 0 {
		c.HostDownBackoff = 5 * time.Minute
	}
	if c.HostDownGiveUp <= 0 {
		c.HostDownGiveUp = time.Hour
	}
	if c.RobotsExpiry <= 0 {
		c.RobotsExpiry = 24 * time.Hour
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = 5
	}
	if c.DNSRetries <= 0 {
		c.DNSRetries = 2
	}
	if c.WorkbenchBytes <= 0 {
		c.WorkbenchBytes = 512 << 20
	}
	if c.FrontSize <= 0 {
		c.FrontSize = 256
	}
	if c.DNSWorkers <= 0 {
		c.DNSWorkers = 64
	}
	if c.MinFlushGap <= 0 {
		c.MinFlushGap = 200 * time.Millisecond
	}
	if c.Stats == nil {
		c.Stats = new(stats.Crawl)
	}
	if c.Router == nil {
		c.Router = Local{}
	}
	if c.Clock == nil {
		c.Clock = clock.System
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Task is one request for a fetcher: a URL, the address to dial, and
// whether it is the robots.txt of its key. It must be handed back with Done
// exactly once.
type Task struct {
	SchemeAuthority string // "http://host:port"
	PathQuery       string // "/path?query"
	Addr            netip.Addr
	Robots          bool
	RobotsHops      int  // robots.txt redirects followed before this request
	Attempt         int  // 0 for the first try
	Meta            Meta // how the URL was found (zero for robots.txt)

	vs    *visitState
	other *ipEntry // the URL's own workbench entry, when not vs's (multi-host policies)
	gen   uint64   // the settings generation it was dispatched under (see Recalled)
}

// Host returns the host name of the task's URL (an IPv6 address without
// brackets).
func (t *Task) Host() string { return hostOf(t.SchemeAuthority) }

// URL returns the task's absolute URL.
func (t *Task) URL() string { return t.SchemeAuthority + t.PathQuery }

// Result says how a fetch went, for scheduling purposes.
type Result int

const (
	// Fetched: a response was received (any status); nothing to retry.
	Fetched Result = iota
	// RetryLater: a network failure or a 5xx; try again after a delay, up
	// to MaxRetries.
	RetryLater
	// Failed: a failure not worth retrying (e.g. the address was refused).
	Failed
	// Abandoned: the fetch was cut by shutdown; the URL goes back to its
	// queue untouched.
	Abandoned
	// Blocked: the operator blocked the URL's host before its request
	// (the fetcher counted and logged the URL): it is dropped, not counted
	// as a failure, and so is the queue of its visit state when that is
	// the host's own (DropBlocked).
	Blocked
	// Unreachable: no connection to the host could be made (refused,
	// timed out, no route): the host is down, not the URL. The URL goes
	// back to the head of its queue, its tries untouched, and its visit
	// state waits with a growing delay (HostDownBackoff); a host
	// unreachable for HostDownGiveUp is given up (DropHostDown).
	Unreachable
)

// Outcome is a Task handed back by a fetcher.
type Outcome struct {
	Task       *Task
	Result     Result
	End        time.Time     // end of the response (or of the failure)
	Duration   time.Duration // from request start to End
	RetryAfter time.Duration // from a 429/503 Retry-After header
	Robots     RobotsRules   // the parsed robots.txt (robots tasks: nil when it must be retried)
	// RobotsRedirect, for a robots task answered by a redirect to be
	// followed (same scheme and authority), is the path+query it points
	// to: the scheduler asks for it next, after the key's and the IP's
	// delays, while no page of the authority is fetched.
	RobotsRedirect string
}

// Frontier is one agent's frontier. Create it with New, feed it with
// Enqueue, run its scheduler with Run, and end it with Close.
type Frontier struct {
	cfg   Config
	stats *stats.Crawl
	log   *slog.Logger

	todo chan *Task
	done chan Outcome
	wake chan struct{}

	counts      countingMap
	routeMu     sync.RWMutex // read-held from a URL's Router.OwnerOf to its sieve (RouteBarrier)
	holds       holdSet      // addresses held until a hand-off's release (handoff.go)
	running     atomic.Bool  // Run has begun
	outstanding atomic.Int64
	idle        atomic.Bool // Run is waiting for Until (see Idle)
	busy        atomic.Bool // work arrived since Run last found itself idle
	atLimit     atomic.Bool // MaxURLs dispatched: the ready queue waits for a raised limit
	// sieve accounting: keys enqueued, and keys covered by the last flush
	sieveIn      atomic.Int64
	sieveFlushed atomic.Int64
	sieveErr     atomic.Pointer[error]
	backlog      backlogKeys // keys enqueued since the last flush began (backlogkeys.go)

	readyMu   sync.Mutex // serialises Push from the sieve's flush and the scheduler's saves
	capturing bool       // a checkpoint is copying new ready URLs (under readyMu)
	captured  [][]byte

	keyBufs sync.Pool // *[]byte buffers for Enqueue's keys
	batches sync.Pool // *enqueueBatch buffers for EnqueueAll

	parsingMu sync.Mutex
	parsing   map[*Task]int // tasks fetched, not yet parsed (Acquire/Release)

	checkpoints chan checkpointReq
	control     chan controlReq
	runDone     chan struct{} // closed when Run returns
	released    notify.Signal // a task taken back from a fetcher (Released)
	settled     notify.Signal // the scheduler found nothing to do (Settled)
	live        atomic.Pointer[liveSettings]
	paused      atomic.Bool
	gen         atomic.Uint64 // settings generation: one more at each Reconfigure (see Recalled)

	// Scheduler state (owned by Run's goroutine; Close uses it after Run).
	sched *scheduler
	clock Clock
	base  time.Time

	sieve Sieve // from Config.OpenSieve (nil without one)
}

// New creates a frontier: it reads cfg.Counts, then opens the sieve with
// cfg.OpenSieve, giving it the frontier's Receiver.
func New(cfg Config) (*Frontier, error) {
	cfg.setDefaults()
	f := &Frontier{
		cfg:   cfg,
		stats: cfg.Stats,
		log:   cfg.Logger,
		todo:  make(chan *Task, 64),
		done:  make(chan Outcome, 1024),
		wake:  make(chan struct{}, 1),
		clock: cfg.Clock,
		base:  cfg.Clock.Now(),

		parsing:     make(map[*Task]int),
		checkpoints: make(chan checkpointReq),
		control:     make(chan controlReq),
		runDone:     make(chan struct{}),
	}
	f.live.Store(&liveSettings{cfg.Settings, cfg.Cuts})
	f.counts.init(cfg.Assign.GroupHash)
	f.backlog.init()
	f.sched = newScheduler(f)
	if len(cfg.Handovers) > 0 {
		f.sched.restoreHandovers(cfg.Handovers)
	}
	if cfg.Counts != nil {
		if err := f.counts.readFrom(cfg.Counts); err != nil {
			return nil, fmt.Errorf("frontier: per-key counts: %w", err)
		}
	}
	if cfg.OpenSieve != nil {
		s, err := cfg.OpenSieve(&Receiver{f: f})
		if err != nil {
			return nil, err
		}
		f.sieve = s
	}
	return f, nil
}

// Todo is where fetchers receive tasks. It is closed when Run returns.
func (f *Frontier) Todo() <-chan *Task { return f.todo }

// Done hands a task back to the scheduler. Call Acquire before Done when
// the result still has to be parsed, so that the crawl is not declared over
// before its links are enqueued.
func (f *Frontier) Done(o Outcome) { f.done <- o }

// Acquire records that the result of t is still to be parsed: the crawl is
// not over while it is, and a checkpoint counts t as not done (its URL is
// fetched again after a crash, so that the links it holds are not lost).
// Release ends it. Safe for concurrent use.
func (f *Frontier) Acquire(t *Task) {
	f.outstanding.Add(1)
	f.parsingMu.Lock()
	f.parsing[t]++
	f.parsingMu.Unlock()
}

// Release ends what Acquire began.
func (f *Frontier) Release(t *Task) {
	f.parsingMu.Lock()
	if f.parsing[t]--; f.parsing[t] <= 0 {
		delete(f.parsing, t)
	}
	f.parsingMu.Unlock()
	if f.outstanding.Add(-1) == 0 {
		f.poke()
	}
}

func (f *Frontier) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// now is the frontier's clock in nanoseconds since New.
func (f *Frontier) now() int64 { return int64(clock.Since(f.clock, f.base)) }

// at converts a wall time to the frontier's clock.
func (f *Frontier) at(t time.Time) int64 { return int64(t.Sub(f.base)) }

// Receiver receives the sieve's new flows (BUbiNG's NewFlowReceiver): keys
// found new are pushed to the ready queue, within the per-key budget. New
// gives one to Config.OpenSieve.
type Receiver struct{ f *Frontier }

// PrepareToAppend starts a flow.
func (r *Receiver) PrepareToAppend() error { return nil }

// Append takes one new key (Meta and URL) to the ready queue, unless its
// politeness key is over budget.
func (r *Receiver) Append(hash uint64, key []byte) error {
	f := r.f
	f.stats.SieveNew.Add(1)
	if len(key) < MetaLen || key[0] != MetaVersion {
		_, err := DecodeMeta(key)
		return fmt.Errorf("frontier: sieve key: %w", err)
	}
	sa := schemeAuthorityOf(key[MetaLen:])
	if budget := f.live.Load().MaxURLsPerKey; budget > 0 && f.counts.add(sa) > budget {
		f.overBudget(key)
		return nil
	}
	if rr, ok := f.cfg.Router.(ReadyRouter); ok {
		if to := rr.ReadyOwner(key); to != Self {
			if err := rr.ForwardReady(to, key); err != nil {
				return fmt.Errorf("frontier: forward ready URL to %q: %w", to, err)
			}
			return nil
		}
		if rf, ok := rr.(ReadyFilter); ok && rf.HeldAlready(key) { // readyfilter.go
			return nil
		}
	}
	return f.pushReady(key)
}

// pushReady appends a record to the ready queue (and to a checkpoint's
// capture) and wakes the scheduler's idle wait.
func (f *Frontier) pushReady(key []byte) error {
	f.busy.Store(true)
	f.readyMu.Lock()
	err := f.cfg.Ready.Push(key)
	if f.capturing && err == nil {
		f.captured = append(f.captured, append([]byte(nil), key...))
	}
	f.readyMu.Unlock()
	if err != nil {
		return fmt.Errorf("frontier: ready queue push: %w", err)
	}
	f.stats.Ready.Add(1)
	return nil
}

// ReadyRouter is what a Router of a crawl of several agents adds to place
// each URL the sieve finds new with the agent that fetches from its host's
// address, so that one agent makes every request to one address and the
// per-address politeness holds across the crawl. The sieve's owner has
// counted the URL against its key's budget; the address's owner gives the
// record to AcceptReady. ReadyOwner is called from the sieve's flush (it
// may resolve the host); ForwardReady may block, as Forward does.
type ReadyRouter interface {
	ReadyOwner(rec []byte) Peer
	ForwardReady(to Peer, rec []byte) error
}

// AcceptReady takes a record that another agent's sieve found new and
// whose host's address this agent fetches from, or a hand-over record
// (handover.go) from an agent that held its key: it goes straight to the
// ready queue (no URL cache, budget or sieve: the sender applied them).
// Safe for concurrent use.
func (f *Frontier) AcceptReady(rec []byte) error {
	_, inner, _, err := SplitHandover(rec)
	if err == nil {
		_, err = DecodeMeta(inner)
	}
	if err != nil {
		return err
	}
	err = f.pushReady(rec)
	f.poke()
	return err
}

// Idle reports whether the frontier has nothing queued, in flight, being
// parsed or waiting in the sieve: with Config.Until set, the state in which
// Run waits instead of returning. Once MaxURLs pages are dispatched, URLs
// left in the ready queue do not make it busy: nothing takes them until
// the limit is raised. Safe for concurrent use.
func (f *Frontier) Idle() bool {
	return f.idle.Load() && !f.busy.Load() && f.outstanding.Load() == 0 &&
		f.sieveIn.Load() == f.sieveFlushed.Load() && (f.atLimit.Load() || f.cfg.Ready.Len() == 0)
}

// FinishedAppending ends a flow and wakes the scheduler.
func (r *Receiver) FinishedAppending() error { r.f.poke(); return nil }

// NoMoreAppend is called when the sieve closes.
func (r *Receiver) NoMoreAppend() error { return nil }

// schemeAuthorityOf returns the "scheme://authority" prefix of a URL key.
func schemeAuthorityOf(key []byte) []byte {
	i := bytes.Index(key, []byte("://"))
	if i < 0 {
		return key
	}
	j := bytes.IndexByte(key[i+3:], '/')
	if j < 0 {
		return key
	}
	return key[:i+3+j]
}

// hostOf returns the host name of a "scheme://host[:port]" string, without
// brackets for IPv6 literals.
func hostOf(sa string) string {
	h := sa[strings.Index(sa, "://")+3:]
	if len(h) > 0 && h[0] == '[' {
		if j := strings.IndexByte(h, ']'); j > 0 {
			return h[1:j]
		}
	}
	for k := len(h) - 1; k >= 0; k-- {
		if h[k] == ':' {
			return h[:k]
		}
		if h[k] < '0' || h[k] > '9' {
			break
		}
	}
	return h
}
