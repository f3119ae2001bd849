package benchscale

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"time"
)

// Options configure a run. The zero value of every field selects its
// default.
type Options struct {
	// Known is the number of URLs known (found new by the sieve) at which
	// the crawl is checkpointed and stopped (default 10⁶).
	Known int64
	// Petrel is the petrel binary (default: os.Executable()).
	Petrel string
	// WorkDir holds the web's files and the crawl directory (default: a
	// temporary directory, removed afterwards unless Keep).
	WorkDir string
	Keep    bool

	// The generated web (see testweb.GenConfig; zero: its defaults).
	Hosts, PagesPerHost, Addrs, LinksPerPage int
	Seed                                     int64
	FirstIP                                  netip.Addr // default 127.128.0.1
	Port                                     int        // default 80; -1: an ephemeral port

	// Politeness of the crawl (defaults 100ms and 5ms: small, so that
	// politeness is not what bounds the rate).
	HostDelay, IPDelay time.Duration
	// CheckpointEvery is the crawl's --checkpoint-every (default 5m).
	CheckpointEvery time.Duration
	// Every is the sampling interval (default 5s).
	Every time.Duration
	// TimeBound stops the crawl when N is not reached in time (default 2h).
	TimeBound time.Duration
	// WebStartTimeout bounds the generated web's start-up (default: the
	// time bound).
	WebStartTimeout time.Duration
	// Recover kills the crawl after the checkpoint at N (SIGKILL) and
	// restarts it, timing the recovery.
	Recover bool
	// Resume continues the crawl already in WorkDir's crawl directory (an
	// earlier run on the same web, e.g. one its time bound stopped) instead
	// of starting a new one. Samples and rates are this run's; URLs known
	// and pages count from the crawl's start. It needs WorkDir.
	Resume bool
	// CrawlArgs are extra arguments of "petrel crawl".
	CrawlArgs []string
	// Plot, when set, is the SVG file drawn.
	Plot string
	// Log receives progress (default: text on stderr).
	Log *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Known <= 0 {
		o.Known = 1_000_000
	}
	if o.Petrel == "" {
		p, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("benchscale: petrel binary: %w", err)
		}
		o.Petrel = p
	}
	if o.Resume && o.WorkDir == "" {
		return o, errors.New("benchscale: resuming needs the work directory of the earlier run")
	}
	if !o.FirstIP.IsValid() {
		o.FirstIP = netip.AddrFrom4([4]byte{127, 128, 0, 1})
	}
	if !o.FirstIP.Is4() || !o.FirstIP.IsLoopback() {
		return o, errors.New("benchscale: the first address must be an IPv4 loopback address")
	}
	switch {
	case o.Port == 0:
		o.Port = 80
	case o.Port < 0:
		o.Port = 0
	}
	if o.HostDelay <= 0 {
		o.HostDelay = 100 * time.Millisecond
	}
	if o.IPDelay <= 0 {
		o.IPDelay = 5 * time.Millisecond
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 5 * time.Minute
	}
	if o.Every <= 0 {
		o.Every = 5 * time.Second
	}
	if o.TimeBound <= 0 {
		o.TimeBound = 2 * time.Hour
	}
	if o.WebStartTimeout <= 0 {
		o.WebStartTimeout = o.TimeBound
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return o, nil
}

// discard is a logger that writes nothing (for tests).
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
