package benchcrawl

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/petrel-crawler/petrel/internal/agent"
)

// Peer names accepted in [Options.Peers].
const (
	PeerPetrel  = "petrel"  // Petrel itself, run as "petrel crawl"
	PeerColly   = "colly"   // the Colly crawler of bench/colly
	PeerWget    = "wget"    // GNU wget -r, in a private mount namespace
	PeerScrapy  = "scrapy"  // the Scrapy crawler of bench/scrapy, in a private mount namespace
	PeerCrawlee = "crawlee" // the Crawlee CheerioCrawler of bench/crawlee, in a private mount namespace
	PeerLimit   = "limit"   // the synthetic web's own maximum rate, measured with wrk
)

// Options configures one benchmark. The zero value of every field selects
// its default; the defaults depend on [Options.PolitenessBound].
type Options struct {
	// Petrel is the petrel binary (default: os.Executable()).
	Petrel string
	// Colly is a built bench/colly binary. If empty, the harness builds one
	// from CollySource into WorkDir with the go command.
	Colly string
	// CollySource is the directory of the bench/colly module (default:
	// bench/colly under the nearest directory above the working directory
	// that holds it).
	CollySource string
	// Go is the go command used to build the Colly crawler (default: "go"
	// from PATH, then /usr/local/go/bin/go).
	Go string
	// Wget and Wrk are the GNU wget and wrk binaries (default: looked up in
	// PATH). A missing binary skips its peer with a note.
	Wget, Wrk string
	// Python runs the Scrapy crawler (default /usr/bin/python3, Debian's,
	// which python3-scrapy installs for). Node runs the Crawlee crawler
	// (default: node from PATH, then /usr/bin/node), with crawlee from
	// ToolsDir/node_modules (default $PETREL_TOOLS_DIR, else
	// /opt/petrel-tools). A missing tool skips its peer with a note.
	Python, Node, ToolsDir string
	// BenchDir is the repository's bench directory, which holds the
	// Scrapy and Crawlee crawlers (default: bench under the nearest
	// directory above the working directory that holds it).
	BenchDir string
	// PeerConcurrency is the global cap on the requests in flight of
	// Scrapy and Crawlee (default: Petrel's own, its --fetchers default).
	PeerConcurrency int
	// WorkDir holds the web's files and each crawler's output (default: a
	// new temporary directory, removed at the end unless Keep is set).
	WorkDir string
	// Keep keeps WorkDir.
	Keep bool

	// PolitenessBound selects the politeness-bound benchmark: delays
	// default to 2s/1s, the shape to 400 hosts over 100 addresses with 30
	// pages each, the time bound to 60s, and the report includes the
	// politeness efficiency (achieved rate ÷ the rate the delays allow).
	PolitenessBound bool

	// Shape is "" (the synthetic web of "petrel testweb") or "real": the
	// generated web shaped like the real one ("petrel testweb --shape
	// real": HTTPS with its own certificate authority, given to every
	// crawler, real page sizes, latency, failures, redirects; Hosts and
	// PagesPerHost apply, HostsPerIP, LinksPerPage and PageBytes do not,
	// and the limit is not measured).
	Shape string

	// The synthetic web's shape (defaults: the headline shape, 2,000 hosts
	// over 500 addresses, 50 pages of ~20 KiB with 40 links per host).
	Hosts, HostsPerIP, PagesPerHost, LinksPerPage, PageBytes int
	// FirstIP is the web's first loopback address (default 127.90.0.1).
	FirstIP netip.Addr
	// Port is the port on every address (default 8080; -1 = an ephemeral
	// port per address).
	Port int

	// HostDelay and IPDelay are the politeness delays given to every
	// crawler (defaults 100ms and 10ms; 2s and 1s when PolitenessBound).
	HostDelay, IPDelay time.Duration
	// Peers lists the crawlers to run, from PeerPetrel, PeerColly, PeerWget,
	// PeerScrapy, PeerCrawlee and PeerLimit (default: all; PeerLimit is not
	// run when PolitenessBound). Petrel always runs first: every ratio is
	// to it.
	Peers []string
	// MaxURLs bounds the pages of Petrel, Colly, Scrapy and Crawlee
	// (--max-urls; 0 = none).
	MaxURLs int64
	// TimeBound bounds each crawl (default 3m; 60s when PolitenessBound).
	// A crawler still running is interrupted (SIGINT, then SIGKILL after
	// 30s) and its figures cover the time it ran.
	TimeBound time.Duration
	// Progress is the sampling interval of the pages/s series (default 1s).
	Progress time.Duration
	// LimitDuration, LimitAddrs and LimitConns shape the wrk measurement:
	// LimitAddrs concurrent wrk processes (default 2), each on its own
	// address of the web with one thread and LimitConns connections
	// (default 32) for LimitDuration (default 10s).
	LimitDuration time.Duration
	LimitAddrs    int
	LimitConns    int
	// VerifyWARC counts Petrel's page records in its WARC files to check
	// its own page count (default on; set SkipVerifyWARC to turn it off).
	SkipVerifyWARC bool
	// WebStartTimeout bounds the synthetic web's start-up (default: the
	// time bound, at least 3m).
	WebStartTimeout time.Duration
	// Repeat runs every crawler this many times (default 1), in rounds
	// (Petrel, Colly, wget, Scrapy, Crawlee, then again), so that a drift of the machine's
	// speed touches each alike; the report's table and ratios use each
	// crawler's median run by pages/s, and every run is listed.
	Repeat int
	// Agents, when 2 or more, adds a crawl of that many agents of one
	// crawl on this machine to every round, right after the single Petrel
	// (see agents.go); the report then compares the two (AgentsSummary).
	// Peers defaults to Petrel alone.
	Agents int
	// AgentFirstIP is the first agent's loopback address; the others take
	// the next ones (default 127.216.0.1).
	AgentFirstIP netip.Addr
	// AgentProcs is each agent's GOMAXPROCS. Zero shares this machine's
	// cores out: max(1, cores ÷ Agents), as agents on one machine would
	// be run; -1 leaves Go's default (every core, for every agent).
	AgentProcs int
	// ClusterBatchDelay, if set, is the agents' --cluster-batch-delay
	// (otherwise the crawler's default).
	ClusterBatchDelay time.Duration
	// Ops measures the operations' overhead (see ops.go): every round runs
	// Petrel with the crawl log off and no console, then with the console
	// on and polled as an open console page polls it; the report compares
	// the two (OpsSummary). Peers defaults to Petrel alone.
	Ops bool
	// CPUProfileDir, if set, gets a CPU profile of every Petrel process
	// (--cpuprofile), named after its run and agent.
	CPUProfileDir string
	// Plot, if set, is the path of an SVG file drawing pages/s over time.
	Plot string
	// Log receives progress messages (default: slog.Default()).
	Log *slog.Logger
}

// withDefaults returns o with every zero field set.
func (o Options) withDefaults() (Options, error) {
	if o.Petrel == "" {
		p, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("benchcrawl: petrel binary: %w", err)
		}
		o.Petrel = p
	}
	if o.Shape != "" && o.Shape != "real" {
		return o, fmt.Errorf("benchcrawl: --shape %q: want \"real\"", o.Shape)
	}
	if o.Shape != "" && o.PolitenessBound {
		return o, errors.New("benchcrawl: --shape real and --politeness do not go together")
	}
	pb := o.PolitenessBound
	def := func(v *int, headline, polite int) {
		if *v <= 0 {
			if pb {
				*v = polite
			} else {
				*v = headline
			}
		}
	}
	def(&o.Hosts, 2000, 400)
	def(&o.HostsPerIP, 4, 4)
	def(&o.PagesPerHost, 50, 30)
	def(&o.LinksPerPage, 40, 40)
	def(&o.PageBytes, 20<<10, 20<<10)
	defD := func(v *time.Duration, headline, polite time.Duration) {
		if *v <= 0 {
			if pb {
				*v = polite
			} else {
				*v = headline
			}
		}
	}
	defD(&o.HostDelay, 100*time.Millisecond, 2*time.Second)
	defD(&o.IPDelay, 10*time.Millisecond, time.Second)
	defD(&o.TimeBound, 3*time.Minute, 60*time.Second)
	defD(&o.Progress, time.Second, time.Second)
	defD(&o.LimitDuration, 10*time.Second, 10*time.Second)
	if o.WebStartTimeout <= 0 {
		o.WebStartTimeout = max(o.TimeBound, 3*time.Minute)
	}
	if o.LimitAddrs <= 0 {
		o.LimitAddrs = 2
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.LimitConns <= 0 {
		o.LimitConns = 32
	}
	if !o.FirstIP.IsValid() {
		o.FirstIP = netip.AddrFrom4([4]byte{127, 90, 0, 1})
	}
	if !o.FirstIP.IsLoopback() {
		return o, fmt.Errorf("benchcrawl: first address %v is not a loopback address", o.FirstIP)
	}
	switch {
	case o.Port == 0:
		o.Port = 8080
	case o.Port < 0:
		o.Port = 0
	}
	switch {
	case len(o.Peers) > 0:
	case o.Agents > 1 || o.Ops:
		o.Peers = []string{PeerPetrel}
	default:
		o.Peers = []string{PeerPetrel, PeerColly, PeerWget, PeerScrapy, PeerCrawlee}
		if !pb {
			o.Peers = append(o.Peers, PeerLimit)
		}
	}
	if o.Agents > 1 {
		if !o.AgentFirstIP.IsValid() {
			o.AgentFirstIP = netip.AddrFrom4([4]byte{127, 216, 0, 1})
		}
		if !o.AgentFirstIP.Is4() || !o.AgentFirstIP.IsLoopback() {
			return o, fmt.Errorf("benchcrawl: agents' first address %v is not an IPv4 loopback address", o.AgentFirstIP)
		}
		if o.AgentProcs == 0 {
			o.AgentProcs = max(1, runtime.NumCPU()/o.Agents)
		}
		if !o.has(PeerPetrel) {
			return o, errors.New("benchcrawl: --agents compares with the single Petrel: keep petrel in --peers")
		}
	}
	if o.Ops && !o.has(PeerPetrel) {
		return o, errors.New("benchcrawl: --ops compares with Petrel's crawl with the operations off: keep petrel in --peers")
	}
	for _, p := range o.Peers {
		switch p {
		case PeerPetrel, PeerColly, PeerWget, PeerScrapy, PeerCrawlee, PeerLimit:
		default:
			return o, fmt.Errorf("benchcrawl: unknown peer %q (want petrel, colly, wget, scrapy, crawlee or limit)", p)
		}
	}
	o.peerTools()
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o, nil
}

// peerTools sets the defaults of the Scrapy and Crawlee crawlers' tools.
func (o *Options) peerTools() {
	if o.Python == "" {
		o.Python = "/usr/bin/python3"
	}
	if o.Node == "" {
		if p, err := exec.LookPath("node"); err == nil {
			o.Node = p
		} else if _, err := os.Stat("/usr/bin/node"); err == nil {
			o.Node = "/usr/bin/node"
		}
	}
	if o.ToolsDir == "" {
		o.ToolsDir = cmp.Or(os.Getenv("PETREL_TOOLS_DIR"), "/opt/petrel-tools")
	}
	if o.PeerConcurrency <= 0 {
		o.PeerConcurrency = agent.Defaults().Fetchers
	}
}

// has reports whether peer p is selected.
func (o *Options) has(p string) bool {
	for _, q := range o.Peers {
		if q == p {
			return true
		}
	}
	return false
}
