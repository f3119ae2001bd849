package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/bloom"
	"github.com/petrel-crawler/petrel/internal/clock"
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/metrics"
	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/robots"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// ErrUsage marks errors in the crawl's settings or inputs, found before any
// fetching (the command exits 2 on them).
var ErrUsage = errors.New("usage")

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

// Agent is one running crawl.
//
// The methods that read or change the running crawl's parts (Pause,
// Resume, Counters, AddSeeds, Block, Hosts, Host and Why: the console's)
// are for while Run runs. Run stops its console before it closes those
// parts and lets go of them, so none of these may be called once Run is
// closing or has returned. Stats, Metrics, CrawlLog, State, Settings and
// DescribeSettings stay safe after Run; Reconfigure then returns
// ErrNotRunning.
type Agent struct {
	cfg   Config
	clock clock.Clock // cfg.Clock: the time of the frontier and the periodic loops
	stats *stats.Crawl
	log   *slog.Logger

	lock     *os.File
	logFile  *crawllog.EventLog // logs/events.jsonl
	crawlLog *crawllog.Log
	vias     *viaNames // fingerprints of pages whose links are queued → URLs, for crawl.log's via
	seedURLs []string  // the seeds, by frontier.Meta.Seed - 1
	pages    *pageLog
	// filterLine is the summary line on the digest filters and the URL
	// cache, set when the store closes.
	filterLine string
	ready      *diskq.Queue
	virtual    *diskq.Queues
	sieve      *sieve.DRUM
	frontier   *frontier.Frontier
	fetcher    *fetch.Fetcher
	store      *store.Writer
	datasets   *datasets // WAT, WET and columnar index (nil: none asked for)
	digests    *textDigests
	metrics    *metrics.Metrics
	revisits   *revisit.Schedule // the schedule of a --revisit crawl (revisits.go); nil otherwise
	// revisitMoves are the schedule's entries sent to other agents and
	// not yet forgotten here (clusterrevisits.go).
	revisitMoves revisitMoves

	robotsStore *robots.Store // robotsstore.go
	// clusterNode is the cluster's node once joined, for the metrics.
	clusterNode atomic.Pointer[cluster.Node]
	warc        atomic.Pointer[store.Writer] // the store, kept after closeAll for the metrics

	// The settings that can change while the crawl runs: published for
	// the goroutines that read them (live), held by the control loop (cur,
	// read under curMu by Settings), and those changed so far (changed,
	// saved in state/; the control loop's).
	live     atomic.Pointer[live]
	curMu    sync.Mutex
	cur      Config
	changed  map[string]any
	reconfig chan reconfigReq
	runDone  chan struct{} // closed when Run's control loop ends
	seeds    []urlx.URL

	progress   io.Writer
	cpSeq      int
	cpBufs     checkpointBuffers
	cpRequests chan chan error // a nil reply: nobody waits
	crash      *crashPoint     // fault injection for the crash tests (nil normally)
	// observe, when set (by tests), is told the URL and Meta of every
	// response a parser handles.
	observe func(url string, m frontier.Meta)
	opened  bool // Open succeeded: closing is a clean stop
	// markedRunning says this Open wrote state/RUNNING over a directory
	// that needed no recovery: a failed Open ends the marker.
	markedRunning bool
	fallback      *StateError // a corrupt state file: Open goes back to the newest valid checkpoint
	unsaved       bool        // the close could not save all the crawl held: the next start recovers
	// storeErr is the WARC writer's failure, which ends the run through
	// stopOnStoreErr (lifecycle.go).
	storeErr       atomic.Pointer[error]
	stopOnStoreErr atomic.Pointer[context.CancelFunc]
	ended          *runEnd      // how Run ended (nil before)
	leftQueued     int64        // URLs left in the ready queue at the close
	failed         *failedLog   // state/failed (failedlog.go)
	seedFails      seedFailures // why the run's seeds were not fetched (seedfailures.go)
	seedHosts      *seedGuard   // says which seed's host is refused or down (seeds.go)
	retried        bool         // --retry-failed queued state/failed.retry's URLs this run
	// failedThisRun is the URLs given up after failures this run (for
	// the summary).
	failedThisRun int64

	consoleState

	// A crawl of several agents (nil otherwise): see cluster.go.
	resolver    *fetch.Resolver
	node        *cluster.Node
	router      *clusterRouter
	clusterHost *clusterHost
	leaveErr    atomic.Pointer[error] // a leave's outcome (handoff.go)
	clusterIn   atomic.Bool           // the agent has its view with every member here (waitCluster)
	left        atomic.Bool           // the agent left the crawl: everything handed over (handoff.go)
	loopsMu     sync.Mutex            // held by startLoops and by a cluster-wide commit before it (clusterconfig.go)
	loopsUp     bool                  // Run's control loop serves Reconfigure
	until       chan struct{}         // closed when the whole crawl is over
	// The seeds, offered once the view is known.
	clusterSeeds   []urlx.URL
	clusterResumed bool
}

// Open prepares a crawl in cfg.Dir: it validates the settings, locks the
// directory, reads the seeds and the hosts file, and opens the state and
// the WARC store. Errors wrapping ErrUsage are the user's to fix. progress
// receives the progress line (nil: none).
//
// A state file of a crawl stopped cleanly that is found corrupt (a
// *StateError) sends Open back to the newest valid checkpoint, as after a
// crash, and it says so on progress; with no checkpoint it is the error.
func Open(cfg Config, progress io.Writer) (*Agent, error) {
	a, err := open(cfg, progress, nil)
	var se *StateError
	if !errors.As(err, &se) {
		return a, err
	}
	if len(listCheckpoints(filepath.Join(cfg.Dir, "state", "checkpoints"))) == 0 {
		return nil, fmt.Errorf("%w; no checkpoint to go back to", err)
	}
	return open(cfg, progress, se)
}

// StateError is a state file of a crawl stopped cleanly found corrupt.
type StateError struct{ Err error }

func (e *StateError) Error() string { return "agent: state/" + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// corruptState returns err, from opening the state file name of a crawl
// stopped cleanly, as a *StateError; nil when err is nil or the system's
// (a path error: permissions, a full disk), which going back to a
// checkpoint would not mend, or an earlier Petrel's format.
func corruptState(name string, err error) *StateError {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) || errors.Is(err, diskq.ErrOldFormat) {
		return nil
	}
	return &StateError{fmt.Errorf("%s: %w", name, err)}
}

// open is Open; fallback, when not nil, is the corrupt state file that
// makes it go back to the newest valid checkpoint.
func open(cfg Config, progress io.Writer, fallback *StateError) (a *Agent, err error) {
	_, statErr := os.Stat(cfg.Dir)
	made := errors.Is(statErr, os.ErrNotExist) // a failed Open removes the directory it made
	seeds, hosts, resumed, err := checkInputs(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	opened := &Agent{cfg: cfg, clock: cfg.Clock, stats: new(stats.Crawl), progress: progress, cpRequests: make(chan chan error, 1),
		reconfig: make(chan reconfigReq), runDone: make(chan struct{}), fallback: fallback}
	a = opened
	defer func() {
		if err != nil {
			opened.closeAll()
			if made {
				os.RemoveAll(cfg.Dir)
			}
		}
	}()
	if err := a.openLogs(&cfg, seeds); err != nil {
		return nil, err
	}
	if err := a.openState(filepath.Join(cfg.Dir, "state")); err != nil {
		return nil, err
	}
	if err := a.openFrontier(&cfg, hosts, seeds); err != nil {
		return nil, err
	}
	if err := a.openRevisits(&cfg, !a.markedRunning); err != nil { // revisits.go
		return nil, err
	}
	if err := a.openFetcherAndStore(&cfg); err != nil {
		return nil, err
	}
	if cfg.Cluster.Enabled() {
		// Seeds are routed like any URL, once the view is known (Run).
		if err := a.startCluster(seeds, resumed); err != nil {
			return nil, err
		}
	} else {
		a.offerSeeds(seeds, resumed)
		if err := a.requeueFailed(filepath.Join(cfg.Dir, "state")); err != nil { // failedlog.go
			return nil, err
		}
	}
	a.opened = true
	return a, nil
}

// checkInputs validates the settings and reads the seeds and the hosts
// file, before anything is written; it creates the crawl directory.
func checkInputs(cfg Config) (seeds []urlx.URL, hosts map[string][]netip.Addr, resumed bool, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, false, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if cfg.RetryFailed && cfg.Cluster.Enabled() {
		return nil, nil, false, usageErr("--retry-failed: not in a crawl of several agents (the address of a URL given up may be another agent's now)")
	}
	if err := checkComplete(cfg.Dir); err != nil && !(cfg.RetryFailed && hasFailed(cfg.Dir)) {
		return nil, nil, false, err
	}
	seeds, err = readSeeds(cfg)
	if err != nil {
		return nil, nil, false, err
	}
	resumed = holdsCrawl(cfg.Dir)
	if len(seeds) == 0 && !resumed {
		return nil, nil, false, fmt.Errorf("%w: %w", ErrUsage, ErrNoSeeds)
	}
	if cfg.RetryFailed && !resumed {
		return nil, nil, false, usageErr("--retry-failed: %s holds no crawl to resume", cfg.Dir)
	}
	hosts = map[string][]netip.Addr{}
	if cfg.Fetch.HostsFile != "" {
		f, err := os.Open(cfg.Fetch.HostsFile)
		if err != nil {
			return nil, nil, false, usageErr("--hosts: %v", err)
		}
		hosts, err = fetch.ParseHostsFile(f)
		f.Close()
		if err != nil {
			return nil, nil, false, usageErr("--hosts %s: %v", cfg.Fetch.HostsFile, err)
		}
	}
	if cfg.Fresh {
		if ents, err := os.ReadDir(cfg.Dir); err == nil && len(ents) > 0 {
			return nil, nil, false, usageErr("--fresh: crawl directory %s is not empty", cfg.Dir)
		}
	}
	if err := checkListeners(cfg); err != nil {
		return nil, nil, false, err
	}
	for _, d := range []string{"warc", "state", "logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, nil, false, usageErr("crawl directory: %v", err)
		}
	}
	return seeds, hosts, resumed, nil
}

// checkListeners checks, before the crawl directory is touched, what the
// start would find wrong later: the cluster's key file, and that the
// console's address is free. (A start that fails later still ends what it
// made: see closeLock.)
func checkListeners(cfg Config) error {
	if cfg.Cluster.Enabled() {
		if _, err := cluster.ReadKeyFile(cfg.Cluster.KeyFile); err != nil {
			return usageErr("%v", err)
		}
	}
	if ap, err := netip.ParseAddrPort(cfg.Console.Addr); err == nil && ap.Port() != 0 {
		ln, err := net.Listen("tcp", ap.String())
		if err != nil {
			return usageErr("--console-addr: %v", err)
		}
		ln.Close()
	}
	return nil
}

// openLogs locks the directory, opens the logs, and applies the settings
// changed while an earlier run ran (cfg is then the run's).
func (a *Agent) openLogs(cfg *Config, seeds []urlx.URL) (err error) {
	if err := a.lockDir(); err != nil {
		return err
	}
	a.logFile, err = crawllog.OpenEventLog(filepath.Join(cfg.Dir, "logs", "events.jsonl"), crawllog.EventFileBytes, crawllog.EventTotalBytes)
	if err != nil {
		return usageErr("crawl directory: %v", err)
	}
	a.crawlLog, err = crawllog.Open(cfg.Logs.Options(filepath.Join(cfg.Dir, "logs")))
	if err != nil {
		return usageErr("crawl directory: %v", err)
	}
	if cfg.Console.Addr != "" {
		// The console streams the crawl log and tallies the fetches.
		a.logHub = console.NewLogHub(1000)
		a.tally = console.NewTally()
	}
	a.log = slog.New(slog.NewJSONHandler(a.logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if a.changed, err = loadLive(cfg, a.log.Info); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	a.cfg, a.cur = *cfg, *cfg
	a.seeds = seeds
	a.live.Store(newLive(cfg, seeds))
	if a.pages, err = openPageLog(filepath.Join(cfg.Dir, "logs", "pages.jsonl")); err != nil {
		return usageErr("crawl directory: %v", err)
	}
	return nil
}

// openState recovers from a crash if the last run did not close, marks the
// directory as in use, and opens the ready queue, the counters and the
// virtualizer.
func (a *Agent) openState(state string) (err error) {
	if err := checkStateFormat(state); err != nil {
		return err
	}
	if err := checkAssign(state, a.cfg.Frontier.Assign); err != nil { // assignfile.go
		return err
	}
	if n, err := a.block.load(filepath.Join(state, blocklistFile)); err != nil {
		return usageErr("blocklist: %v", err)
	} else if n > 0 {
		a.log.Info("blocklist kept from the last run", "entries", n)
	}
	running := filepath.Join(state, "RUNNING")
	_, err = os.Stat(running)
	recovering := err == nil || a.fallback != nil
	if !recovering {
		if err := checkStateFiles(state); err != nil {
			return &StateError{err}
		}
		if err := a.repairOpenWARC(); err != nil {
			return err
		}
	}
	if recovering {
		if err := a.recover(state); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(running, atomicfile.Options{Sync: true}, func(w io.Writer) error { _, err := fmt.Fprintln(w, os.Getpid()); return err }); err != nil {
		return usageErr("crawl directory: %v", err)
	}
	a.markedRunning = !recovering
	if err := a.openFailed(state); err != nil { // failedlog.go
		return err
	}
	if cps := listCheckpoints(filepath.Join(state, "checkpoints")); len(cps) > 0 {
		fmt.Sscanf(strings.TrimPrefix(cps[len(cps)-1], "cp-"), "%d", &a.cpSeq)
	}
	qopts := diskq.DefaultOptions()
	qopts.Logger = a.log
	a.ready, err = diskq.Open(filepath.Join(state, "ready"), qopts)
	if se := corruptState("ready", err); se != nil && !recovering {
		return se
	}
	if err != nil {
		return fmt.Errorf("agent: open ready queue: %w", err)
	}
	a.stats.Ready.Store(a.ready.Len())
	if b, err := os.ReadFile(filepath.Join(state, "stats.json")); err == nil {
		var snap stats.Snapshot
		if json.Unmarshal(b, &snap) == nil {
			a.stats.Restore(snap)
		}
	}

	// The virtualizer's files are only meaningful to the process that wrote
	// them (a clean stop moves every queued URL back to the ready queue).
	virtDir := filepath.Join(state, "virtual")
	if err := os.RemoveAll(virtDir); err != nil {
		return fmt.Errorf("agent: clear virtualizer: %w", err)
	}
	vopts := diskq.Options{Logger: a.log}
	a.virtual, err = diskq.OpenQueues(virtDir, vopts)
	if err != nil {
		return fmt.Errorf("agent: open virtualizer: %w", err)
	}
	return a.openRobotsStore(state)
}

// openFrontier opens the frontier with its DNS stage and the sieve under it.
func (a *Agent) openFrontier(cfg *Config, hosts map[string][]netip.Addr, seeds []urlx.URL) (err error) {
	state := filepath.Join(cfg.Dir, "state")
	a.metrics = metrics.New(metrics.Sources{
		Stats:   a.stats,
		Version: Version,
		Workers: func() (int, int) { l := a.live.Load(); return l.fetchers, l.parsers },
		WARC:    a.warcFigures,
		Cluster: clusterSource(cfg, a),
		Revisits: func() (revisit.Figures, bool) {
			f, ok := a.Revisits() // revisits.go
			return f, ok || cfg.Revisit.On
		},
		Logs: func() metrics.LogFigures {
			f := a.crawlLog.Figures()
			return metrics.LogFigures{CrawlLines: f.CrawlLines, SkippedLines: f.SkippedLines,
				SkippedDropped: f.SkippedDropped, StreamDropped: f.StreamDropped}
		},
	})
	if err := a.openConsole(); err != nil {
		return err
	}
	guard := fetch.Guard{AllowPrivate: cfg.Fetch.AllowPrivate}
	resolver := fetch.NewResolver(fetch.ResolverOptions{Hosts: hosts, System: cfg.Fetch.SystemDNS,
		Server: cfg.Fetch.DNSServer, Timeout: cfg.Fetch.DNSTimeout, TTL: cfg.Fetch.DNSRefresh / 2})
	a.resolver = resolver
	var router frontier.Router
	if cfg.Cluster.Enabled() {
		host, _ := frontier.ParseAssign("host")
		placed, err := openPlacements(state, a.log)
		if err != nil {
			return err
		}
		a.router = &clusterRouter{a: a, assign: cfg.Frontier.Assign, host: host, stats: a.stats, placed: placed}
		if a.router.early.saved, err = cluster.LoadView(filepath.Join(state, "cluster")); err != nil {
			return err
		}
		a.clusterHost = newClusterHost(a) // clusterinterim.go
		router, a.until = a.router, make(chan struct{})
	}
	if cfg.Revisit.On {
		a.until = make(chan struct{}) // a revisit crawl runs until stopped
	}
	var cuts frontier.Cuts
	if a.live.Load().filters.Active(filter.StageFetch) {
		cuts = a.cutsFor(cfg) // the fetch filter is decided at dispatch
	}
	counts, err := os.Open(filepath.Join(state, "counts"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent: load per-key counts: %w", err)
	}
	var countsIn io.Reader // nil when there is no file (a fresh crawl)
	if err == nil {
		defer counts.Close()
		countsIn = bufio.NewReaderSize(counts, 1<<20)
	}
	handovers, err := loadHandovers(filepath.Join(state, handoversFile))
	if err != nil {
		return fmt.Errorf("agent: load hand-over keys: %w", err)
	}
	a.seedHosts = newSeedGuard(guard, a.progress, seeds)
	a.frontier, err = frontier.New(frontier.Config{
		Settings:    cfg.Frontier,
		Cuts:        cuts,
		Virtualizer: a.virtual,
		RobotsStore: a.frontierRobotsStore(),
		Cache:       sieve.NewURLCache(cfg.URLCacheBytes()),
		Hash:        sieve.Hash,
		Ready:       a.ready,
		Resolver:    dnsStage{r: resolver, m: a.servedMetrics(), seeds: a.seedHosts},
		DNSRefresh:  cfg.Fetch.DNSRefresh,
		Moved:       a.hostMoved,
		Guard:       guard.Check,
		Router:      router,
		Clock:       cfg.Clock,
		RobotsDenied: func(url string, m frontier.Meta) {
			sa := url[:len(url)-len(urlPathQuery(url))]
			a.refuse(url, a.vias.name(m.Via), m, crawllog.ReasonRobots, sa+"/robots.txt")
			a.revisitDropped(url, m)
		},
		Dropped:          a.dropped,
		FetchedElsewhere: a.clusterHost.fetchedElsewhere(), // clusterreturn.go
		Until:            a.until,                          // nil for a single agent
		Stats:            a.stats,
		Logger:           a.log,
		Counts:           countsIn,
		Handovers:        handovers,
		OpenSieve:        func(r *frontier.Receiver) (frontier.Sieve, error) { return a.openSieve(cfg, r) },
	})
	return err
}

// openSieve opens the sieve under the frontier, its new flows going to r
// (through the crash tests' fault injection when it is on).
func (a *Agent) openSieve(cfg *Config, r *frontier.Receiver) (frontier.Sieve, error) {
	var recv sieve.NewFlowReceiver = r
	if a.crash = newCrashPoint(); a.crash != nil {
		recv = &crashingReceiver{NewFlowReceiver: recv, c: a.crash}
	}
	s, err := sieve.Open(filepath.Join(cfg.Dir, "state", "sieve"), recv, sieve.Options{BufferKeys: cfg.Sieve.BufferKeys, Logger: a.log, KeyPrefix: frontier.MetaLen,
		GroupHash: cfg.Frontier.Assign.GroupHash})
	if se := corruptState("sieve", err); se != nil && a.markedRunning {
		return nil, se
	}
	if err != nil {
		return nil, fmt.Errorf("agent: open sieve: %w", err)
	}
	if err := replayReceivedSeen(s, filepath.Join(cfg.Dir, "state"), a.log); err != nil { // countslog.go
		return nil, errors.Join(err, s.Close())
	}
	a.sieve = s
	return s, nil
}

// openFetcherAndStore opens the fetcher, the WARC store and the digest
// filters.
func (a *Agent) openFetcherAndStore(cfg *Config) (err error) {
	state := filepath.Join(cfg.Dir, "state")
	guard := fetch.Guard{AllowPrivate: cfg.Fetch.AllowPrivate}
	idle := fitIdleConns(cfg.Fetch.MaxIdleConns, idlePools(cfg), heldConns(cfg), descriptorLimit(), a.log)
	tlsVerify, err := fetch.ParseTLSVerify(cfg.Fetch.TLSVerify)
	if err != nil {
		return usageErr("--tls-verify: %v", err)
	}
	roots, err := fetch.LoadRoots(cfg.Fetch.CAFile)
	if err != nil {
		return usageErr("--ca-file: %v", err)
	}
	a.fetcher = fetch.New(fetch.Options{
		UserAgent:    cfg.UserAgent,
		Timeout:      cfg.Fetch.Timeout,
		MaxBody:      cfg.Fetch.MaxBody,
		Guard:        guard,
		MaxIdleConns: idle,
		TLSConfig:    &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		TLSVerify:    tlsVerify,
		HTTP2:        cfg.Fetch.HTTP2,
	})
	sopts := cfg.Store.Options()
	sopts.Dir, sopts.Software = filepath.Join(cfg.Dir, "warc"), "Petrel/"+Version
	if p := warcPrefix(*cfg); p != "" {
		sopts.Prefix = p
	}
	sopts.Operator, sopts.IsPartOf, sopts.Robots, sopts.UserAgent = cfg.Operator, crawlName(cfg.Dir), "obey", cfg.UserAgent
	if sopts.Prior, err = loadPrior(cfg.Store, a.log); err != nil { // dedup.go
		return err
	}
	if a.datasets = newDatasets(cfg.Store, a.log); a.datasets != nil {
		sopts.Closed, sopts.Appended = a.datasets.closed, a.datasets.appended
	}
	a.store, err = store.Open(sopts)
	if err != nil {
		return fmt.Errorf("agent: open WARC store: %w", err)
	}
	a.warc.Store(a.store)
	a.digests = newTextDigests()
	// The digest filters of a crawl that stopped cleanly come back, so that
	// duplicates of pages stored before the stop are still recognised.
	if err := loadDigestFilter(filepath.Join(state, "text-digests"), a.digests.readFrom, a.log); err != nil {
		return fmt.Errorf("agent: load text digests: %w", err)
	}
	if err := loadDigestFilter(filepath.Join(state, "payload-digests"), a.store.LoadDigests, a.log); err != nil {
		return fmt.Errorf("agent: load payload digests: %w", err)
	}
	return nil
}

// offerSeeds enqueues the seeds and logs the start or resume of the run.
func (a *Agent) offerSeeds(seeds []urlx.URL, resumed bool) {
	cfg := &a.cfg
	a.vias = new(viaNames)
	for _, s := range seeds {
		a.seedURLs = append(a.seedURLs, s.String())
	}
	for i, s := range seeds {
		if a.tally != nil {
			a.tally.Seed(s.String())
		}
		a.offer(s, "", frontier.Meta{Seed: uint32(min(i+1, math.MaxUint32))})
	}
	if cfg.Sitemaps {
		a.seedSitemaps(seeds)
	}
	a.stats.Runs.Add(1)
	if resumed {
		a.log.Info("crawl resumed", "dir", cfg.Dir, "run", a.stats.Runs.Load(), "seeds", len(seeds), "ready", a.ready.Len())
		if a.progress != nil {
			fmt.Fprintln(a.progress, a.resumeLine())
		}
	} else {
		a.log.Info("crawl started", "dir", cfg.Dir, "seeds", len(seeds), "ready", a.ready.Len())
	}
}

// resumeLine is the line a resumed run prints first: the run, the pages
// fetched so far, the URLs queued, and the settings changed while the
// crawl ran that are in force again instead of the flags' values.
func (a *Agent) resumeLine() string {
	line := fmt.Sprintf("petrel: resumed (run %d): %d pages so far, %d URLs queued", a.stats.Runs.Load(), a.stats.Fetched.Load(), a.ready.Len())
	if len(a.changed) == 0 {
		return line
	}
	t := a.cfg.Table()
	kept := make([]string, 0, len(a.changed))
	for name := range a.changed {
		if s := t.Lookup(name); s != nil {
			kept = append(kept, "--"+name+" "+s.String())
		}
	}
	sort.Strings(kept)
	return line + "; settings changed while it ran, kept (a flag given on this command line wins): " + strings.Join(kept, ", ")
}

// filterSummary is the end summary's line on the digest filters: keys,
// stages, memory, the false-positive budget and the rate their fill gives
// now; and the URL cache's size.
func filterSummary(payload, text bloom.Stats, cacheBytes int) string {
	f := func(s bloom.Stats) string {
		return fmt.Sprintf("%d in %d stage(s), %.1f MiB, false positives ≤ %.0e (now %.1e)",
			s.Keys, s.Stages, float64(s.Bytes)/(1<<20), s.Rate, s.Estimated)
	}
	return fmt.Sprintf("  digest filters     payload %s; text %s; URL cache %.1f MiB", f(payload), f(text), float64(cacheBytes)/(1<<20))
}

// crawlName is the name of the crawl in its WARC files: the base name of
// its directory.
func crawlName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// lockDir takes an exclusive lock on the crawl directory.
func (a *Agent) lockDir() error {
	f, err := os.OpenFile(filepath.Join(a.cfg.Dir, "state", "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return usageErr("crawl directory: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return usageErr("crawl directory %s is in use by another process", a.cfg.Dir)
	}
	a.lock = f
	return nil
}

// Stats returns the crawl's counters.
func (a *Agent) Stats() *stats.Crawl { return a.stats }

// Metrics returns the crawl's Prometheus registry; its Handler serves
// /metrics. Other parts add their collectors with its Register.
func (a *Agent) Metrics() *metrics.Metrics { return a.metrics }

// clusterSource is the metrics' source of cluster figures: nil for an
// agent crawling alone.
func clusterSource(cfg *Config, a *Agent) func() (metrics.ClusterFigures, bool) {
	if !cfg.Cluster.Enabled() {
		return nil
	}
	return a.clusterFigures
}

// warcFigures reads the WARC writer's record and byte counts (zero before
// it opens and after it closes).
func (a *Agent) warcFigures() (records, bytes int64) {
	w := a.warc.Load()
	if w == nil {
		return 0, 0
	}
	st := w.Stats()
	return st.Records, st.CompressedBytes
}

// Run crawls until nothing is left, a limit is reached, or ctx is cancelled
// (a clean stop), then saves the state and closes everything. It returns nil
// after a complete crawl or a clean stop, and the error that stopped the
// crawl otherwise.
func (a *Agent) Run(ctx context.Context) error {
	start := time.Now()
	// Stop (POST /api/v1/stop) ends the run as SIGTERM does: by ending
	// the context the leave of an agent of a cluster waits on.
	ctx, stopAsked := context.WithCancel(ctx)
	defer stopAsked()
	ctx, endLeave := a.leaveFirst(ctx) // an agent of a cluster leaves first (handoff.go)
	defer endLeave()
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	a.stopOnStoreErr.Store(&stopRun)
	if a.storeErr.Load() != nil {
		stopRun()
	}
	a.stopMu.Lock()
	a.stopRun = stopAsked
	asked := a.stopping.Load()
	a.stopMu.Unlock()
	if asked {
		stopAsked()
	}
	consoleCtx, stopConsole := context.WithCancel(context.Background())
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		a.serveConsole(consoleCtx)
	}()
	closeConsole := sync.OnceFunc(func() {
		stopConsole()
		<-consoleDone
	})
	defer closeConsole()
	go func() {
		<-ctx.Done()
		a.stopping.Store(true)
	}()
	if a.node != nil {
		a.clusterHost.takeStop(&stopRun)
		if err := a.waitCluster(ctx); err != nil {
			if ctx.Err() != nil {
				err = nil // stopped while waiting: a clean stop
			}
			return errors.Join(err, a.closeAll())
		}
	}
	l := a.startLoops(ctx)
	defer l.cancelFetch()
	startSnap := a.stats.Snapshot()
	stopRevisits := a.startRevisits(ctx) // revisits.go
	runErr := a.frontier.Run(ctx)
	stopRevisits()
	l.endControl()
	if a.node != nil {
		// What the inbox holds goes into the frontier, which saves it.
		drain, cancel := context.WithTimeout(context.Background(), a.cfg.Cluster.LeaveTimeout)
		if err := a.node.StopReceiving(drain); err != nil {
			a.log.Warn("cluster: inbox not applied at stop; the next start replays it", "err", err)
		}
		cancel()
	}
	stopped := ctx.Err() != nil
	if errors.Is(runErr, context.Canceled) && stopped {
		runErr = nil // a clean stop
	}
	if runErr == nil {
		runErr = a.noSeedFetched(stopped) // seedfailures.go
	}
	l.endWorkers()
	if err := a.storeFailure(); err != nil {
		runErr, stopped = errors.Join(runErr, err), false
	}

	a.ended = &runEnd{err: runErr, stopped: stopped, elapsed: time.Since(start)}
	// The console stops before the parts it reads are closed.
	a.finished.Store(true)
	closeConsole()
	var leaveErr error
	if p := a.leaveErr.Load(); p != nil {
		leaveErr = *p
	}
	err := errors.Join(runErr, a.closeAll(), leaveErr)
	if a.progress != nil {
		fmt.Fprintln(a.progress, a.summary(startSnap))
		if a.cfg.Cluster.Enabled() {
			var f cluster.Fenced
			if n := a.clusterNode.Load(); n != nil {
				f = n.Fenced()
			}
			fmt.Fprintln(a.progress, clusterSummary(a.stats.Snapshot(), f))
		}
	}
	return err
}

// runLoops are the goroutines of a run besides the scheduler: the
// fetchers and parsers, the control loop that sizes their pools, the
// progress and checkpoint loops, and the stop's grace timer.
type runLoops struct {
	a                                      *Agent
	c                                      *control
	results                                chan *fetched
	cancelFetch                            context.CancelFunc // cuts the fetches in flight
	stopControl, stopCheckpoints, stopProg context.CancelFunc
	ctlDone, cpDone, progDone, graceDone   chan struct{}
	ended                                  chan struct{} // closed by endControl: the grace timer is moot
}

// startLoops starts a run's loops; ctx is the run's (its end is a stop).
func (a *Agent) startLoops(ctx context.Context) *runLoops {
	a.loopsMu.Lock()
	a.loopsUp = true
	a.loopsMu.Unlock()
	l := &runLoops{a: a, ctlDone: make(chan struct{}), cpDone: make(chan struct{}), progDone: make(chan struct{}),
		graceDone: make(chan struct{}), ended: make(chan struct{})}
	// Fetches in flight at a stop get a grace period to finish.
	fetchCtx, cancelFetch := context.WithCancel(context.Background())
	l.cancelFetch = cancelFetch
	go func() {
		defer close(l.graceDone)
		select {
		case <-ctx.Done():
			grace := a.clock.NewTimer(a.live.Load().stopGrace)
			defer grace.Stop()
			select {
			case <-grace.C():
				cancelFetch()
			case <-l.ended:
			}
		case <-l.ended:
		}
	}()
	// Fetched pages wait for a parser here: with the parsers' own pages,
	// at most 3 × Parsers bodies (each within --max-body) are held (at
	// most 2 × the first run's Parsers + the parsers now).
	l.results = make(chan *fetched, a.cfg.Parsers*2)
	c := &control{a: a, ctx: ctx,
		progEvery: make(chan time.Duration), cpEvery: make(chan time.Duration),
		fetchers: &pool{run: func(id int, quit <-chan struct{}) { a.fetchLoop(ctx, fetchCtx, id, quit, l.results) }, gauge: &a.stats.Fetchers},
		parsers:  &pool{run: func(_ int, quit <-chan struct{}) { a.parseLoop(l.results, quit) }, gauge: &a.stats.Parsers},
	}
	l.c = c
	c.fetchers.resize(a.cfg.Fetchers)
	c.parsers.resize(a.cfg.Parsers)
	var progCtx, cpCtx, ctlCtx context.Context
	progCtx, l.stopProg = context.WithCancel(context.Background())
	go func() {
		defer close(l.progDone)
		a.progressLoop(progCtx, a.cfg.Progress, c.progEvery)
	}()
	cpCtx, l.stopCheckpoints = context.WithCancel(ctx)
	go func() {
		defer close(l.cpDone)
		a.checkpointLoop(cpCtx, a.cfg.CheckpointEvery, c.cpEvery)
	}()
	ctlCtx, l.stopControl = context.WithCancel(context.Background())
	go func() {
		defer close(l.ctlDone)
		c.loop(ctlCtx)
	}()
	return l
}

// endControl ends, once the scheduler has returned, the control loop
// (Reconfigure then says the crawl is not running), the checkpoint loop and
// the grace timer.
func (l *runLoops) endControl() {
	l.stopControl()
	<-l.ctlDone
	close(l.a.runDone)
	l.stopCheckpoints()
	<-l.cpDone
	close(l.ended)
	<-l.graceDone
}

// endWorkers cuts the fetches still in flight and waits for the fetchers,
// the parsers (every result parsed) and the progress loop to end.
func (l *runLoops) endWorkers() {
	l.cancelFetch()
	l.c.fetchers.wg.Wait()
	close(l.results)
	l.c.parsers.wg.Wait()
	l.stopProg()
	<-l.progDone
}

// progressLoop prints the progress line every interval (0: none) until
// ctx ends; a new interval arrives on every.
func (a *Agent) progressLoop(ctx context.Context, interval time.Duration, every <-chan time.Duration) {
	p := periodic{clock: a.clock}
	set := func(d time.Duration) {
		if a.progress != nil {
			p.set(d)
		}
	}
	set(interval)
	defer p.stop()
	prev, last := a.stats.Snapshot(), a.clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-every:
			set(d)
		case now := <-p.C():
			p.again()
			cur := a.stats.Snapshot()
			line := stats.Line(cur, prev, now.Sub(last))
			if a.revisits != nil {
				line += revisitProgress(a.revisits.Figures()) // revisits.go
			}
			fmt.Fprintln(a.progress, line)
			a.writeProgressFile(cur, now)
			prev, last = cur, now
		}
	}
}

// closeAll saves the state and closes every part that was opened, in
// dependency order; it is safe on a partly opened agent.
func (a *Agent) closeAll() error {
	var errs []error
	state := filepath.Join(a.cfg.Dir, "state")
	if a.frontier != nil && a.sieve != nil {
		if err := a.frontier.Close(); err != nil {
			errs = append(errs, err)
		}
		if a.ready != nil {
			a.leftQueued = a.ready.Len()
		}
		if err := writeChecked(filepath.Join(state, "counts"), a.frontier.SaveCounts); err != nil {
			errs = append(errs, fmt.Errorf("agent: save counts: %w", err))
		}
		if err := writeHandovers(filepath.Join(state, handoversFile), a.frontier.HandoverKeys()); err != nil {
			errs = append(errs, fmt.Errorf("agent: save hand-over keys: %w", err))
		}
	}
	if err := a.closeCluster(); err != nil {
		errs = append(errs, fmt.Errorf("agent: cluster: %w", err))
	}
	if a.virtual != nil {
		if err := a.virtual.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close virtualizer: %w", err))
		}
	}
	if err := a.closeRobotsStore(); err != nil {
		errs = append(errs, err)
	}
	if a.ready != nil {
		if err := a.ready.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: close ready queue: %w", err))
		}
	}
	if a.store != nil {
		errs = append(errs, a.closeStore(state)...)
	}
	if a.revisits != nil {
		a.filterLine += revisitSummary(a.revisits.Figures()) // revisits.go
		if err := a.revisits.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	// What the crawl holds is saved when nothing failed so far and the run
	// did not fail: the index and the logs below are not its state.
	saved := len(errs) == 0 && (a.ended == nil || a.ended.err == nil)
	if a.opened && a.cfg.Store.Index && a.store != nil && a.store.Err() == nil {
		errs = append(errs, a.indexCrawl()...)
	}
	if a.datasets != nil {
		errs = append(errs, a.datasets.close(a.cfg.Dir, a.opened && a.store != nil && a.store.Err() == nil)...)
		a.datasets = nil
	}
	if a.fetcher != nil {
		a.fetcher.CloseIdle()
	}
	if a.console != nil && !a.opened {
		a.console.Close() // a failed Open: Run never serves it
	}
	if a.crawlLog != nil {
		// Every fetcher and parser has ended: no line comes any more. The
		// refusals past skipped.jsonl's cap go into the statistics, so
		// that why knows, on a stopped crawl too, that its answer may be
		// missing.
		if err := a.crawlLog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent: crawl log: %w", err))
		}
		a.stats.SkippedUnlogged.Add(a.crawlLog.Figures().SkippedDropped)
	}
	if n, lost, err := a.failed.close(); err != nil {
		errs = append(errs, err)
	} else {
		a.failedThisRun = n
		a.stats.FailedUnrecorded.Add(lost)
	}
	a.failed = nil
	if a.lock != nil {
		errs = a.closeLock(state, errs, saved)
	}
	if a.log != nil && len(errs) > 0 {
		a.log.Error("close", "err", errors.Join(errs...))
	}
	if a.pages != nil {
		if err := a.pages.close(); err != nil {
			errs = append(errs, err)
		}
		a.pages = nil
	}
	if a.logFile != nil {
		a.logFile.Close()
	}
	a.frontier, a.ready, a.virtual, a.store, a.lock, a.logFile = nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// closeStore closes the WARC store while the digest filters are saved
// beside it, and writes the merged index; it returns what failed.
func (a *Agent) closeStore(state string) (errs []error) {
	// The two digest filters (not synced: see
	// digestfile.go) are written while the WARC writer drains and syncs
	// its last file; no record is written any more. They are saved only
	// from a crawl that opened: after a failed Open the files of the
	// last stop stay as they are.
	var payloadErr, textErr, storeErr error
	var saves sync.WaitGroup
	saves.Go(func() { storeErr = a.store.Close() })
	if a.opened {
		saves.Go(func() {
			payloadErr = saveDigestFilter(filepath.Join(state, "payload-digests"), a.store.SaveDigests)
		})
		if a.digests != nil {
			saves.Go(func() {
				textErr = saveDigestFilter(filepath.Join(state, "text-digests"), a.digests.writeTo)
			})
		}
	}
	saves.Wait()
	if a.opened {
		a.filterLine = filterSummary(a.store.DigestStats(), a.digests.stats(), a.cfg.URLCacheBytes())
	}
	if storeErr != nil && a.opened && payloadErr == nil {
		// The last records may not have reached the WARC files: a
		// filter holding their digests would make their next captures
		// revisits of nothing. Start the next run without one.
		payloadErr = os.Remove(filepath.Join(state, "payload-digests"))
	}
	if payloadErr != nil {
		errs = append(errs, fmt.Errorf("agent: save payload digests: %w", payloadErr))
	}
	if textErr != nil {
		errs = append(errs, fmt.Errorf("agent: save text digests: %w", textErr))
	}
	if storeErr != nil {
		errs = append(errs, storeErr)
	}
	a.stats.WARCBytes.Add(a.store.Stats().CompressedBytes)
	return errs
}

// indexCrawl writes the crawl's merged index. A WARC file that cannot be
// read through is left out of it, said on the progress writer and in the
// event log; the crawl goes on. It returns what kept the index from being
// written.
func (a *Agent) indexCrawl() []error {
	rep, err := store.IndexCrawl(a.cfg.Dir, a.indexOptions()) // indexlang.go
	for _, s := range rep.Skipped {
		a.log.Warn("index: WARC file left out", "err", s)
		if a.progress != nil {
			fmt.Fprintf(a.progress, "petrel: %v: left out of the index (petrel warc check tells what is wrong)\n", s)
		}
	}
	if err != nil {
		return []error{fmt.Errorf("agent: merged index: %w", err)}
	}
	return nil
}

// closeLock ends the marker of a run whose state is saved (saved) and
// saves its counters, logs the end of the run (errs: what failed in
// closing so far), and unlocks the directory; it returns errs with what
// failed here.
//
// The marker stays after a run that failed or could not save all it held
// (a full disk), so that the next start recovers from the last checkpoint
// and fetches again what was not saved; and after a failed Open that
// recovered from a crash, so that the next start recovers again. A
// failed Open that wrote the marker itself ends it.
func (a *Agent) closeLock(state string, errs []error, saved bool) []error {
	if a.opened {
		// After a failed Open the counters are not the crawl's: the
		// saved ones stay.
		snap := a.stats.Snapshot()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		snap["RuntimeMallocs"] = int64(ms.Mallocs) // this process's, for benchmarks
		snap["RuntimeTotalAlloc"] = int64(ms.TotalAlloc)
		if err := writeChecked(filepath.Join(state, "stats.json"), snap.WriteJSON); err != nil {
			errs = append(errs, fmt.Errorf("agent: save stats: %w", err))
			saved = false
		}
	}
	switch {
	case saved && (a.opened || a.markedRunning):
		os.Remove(filepath.Join(state, "RUNNING"))
		if a.retried && len(errs) == 0 {
			// The URLs retried are in the saved queues now.
			os.Remove(filepath.Join(state, failedRetryFile))
		}
	case a.opened:
		a.unsaved = true
		a.log.Warn("close: the crawl's state is not all saved; state/RUNNING kept, the next start recovers from the last checkpoint")
	}
	if a.ended != nil {
		a.logEnd(errors.Join(errs...))
	}
	a.lock.Close()
	return errs
}

// dnsStage adapts the fetch resolver to the frontier: names that cannot
// resolve by retrying are marked permanent; each lookup's duration is
// observed.
type dnsStage struct {
	r     *fetch.Resolver
	m     *metrics.Metrics // nil: no console, no histograms
	seeds *seedGuard       // says which seed the address guard refuses
}

func (d dnsStage) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	start := time.Now()
	addrs, err := d.r.Lookup(ctx, host)
	if d.m != nil {
		d.m.ObserveDNS(time.Since(start))
	}
	if err != nil && (errors.Is(err, fetch.ErrNoSuchHost) || errors.Is(err, fetch.ErrSpecialUseName)) {
		return nil, permanentErr{err}
	}
	if err == nil {
		d.seeds.check(host, addrs)
	}
	return addrs, err
}

type permanentErr struct{ error }

func (permanentErr) Permanent() bool { return true }
func (p permanentErr) Unwrap() error { return p.error }
