package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/store"
)

// Version is Petrel's version, reported in the user agent and WARC files.
const Version = "0.1.0"

// DefaultUserAgent names Petrel, its version and a contact placeholder that
// the operator is told to replace.
const DefaultUserAgent = "Petrel/" + Version + " (+https://example.invalid/set-your-contact-url)"

// Duration is a time.Duration that reads "2s" from TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText formats a Go duration.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Config is every setting of a crawl. The TOML file given with --config
// uses the same names as the flags (with dashes), and flags override it.
type Config struct {
	Seeds        []string `toml:"seeds"`      // seed URLs
	SeedsFile    string   `toml:"seeds-file"` // one URL a line, # comments
	Dir          string   `toml:"dir"`
	HostsFile    string   `toml:"hosts"`
	AllowPrivate bool     `toml:"allow-private"`
	SystemDNS    bool     `toml:"system-dns"` // resolve names absent from the hosts file with the system resolver
	DNSServer    string   `toml:"dns-server"` // "IP:port" asked instead of resolv.conf's servers
	DNSTimeout   Duration `toml:"dns-timeout"`

	HostDelay      Duration `toml:"host-delay"`
	IPDelay        Duration `toml:"ip-delay"`
	MaxDelay       Duration `toml:"max-delay"`
	DelayFactor    float64  `toml:"delay-factor"`
	CrawlDelayCap  Duration `toml:"crawl-delay-cap"`
	ParallelPerKey int      `toml:"parallel-per-key"`
	ParallelPerIP  int      `toml:"parallel-per-ip"`
	Assign         string   `toml:"assign"`
	FrontSize      int      `toml:"front-size"`

	Scope          string `toml:"scope"`
	MaxURLs        int64  `toml:"max-urls"`
	MaxURLsPerHost int64  `toml:"max-urls-per-host"`
	MaxURLLength   int    `toml:"max-url-length"`
	MaxLinks       int    `toml:"max-links"`
	MaxDepth       int    `toml:"max-depth"`           // hop limit from the seeds (0 = none)
	MaxRedirects   int    `toml:"max-redirects"`       // URLs of one redirect chain
	MaxSegRepeats  int    `toml:"max-segment-repeats"` // occurrences of one path segment (0 = no rule)
	NearDupBits    int    `toml:"near-dup-distance"`   // SimHash Hamming distance of a near-duplicate (-1 = no check)

	Fetchers int `toml:"fetchers"`
	// MaxIdleConns bounds the idle keep-alive connections; open
	// descriptors stay under Fetchers + MaxIdleConns + a constant (the
	// agent lowers it to fit the process's descriptor limit).
	MaxIdleConns  int      `toml:"max-idle-conns"`
	Parsers       int      `toml:"parsers"`
	FetchTimeout  Duration `toml:"fetch-timeout"`
	MaxBody       int64    `toml:"max-body"`
	MaxRetries    int      `toml:"retries"`
	RetryDelay    Duration `toml:"retry-delay"`
	RobotsExpiry  Duration `toml:"robots-expiry"`
	UserAgent     string   `toml:"user-agent"`
	WorkbenchSize int64    `toml:"workbench-bytes"`
	URLCacheBytes int      `toml:"url-cache-bytes"`
	SieveBuffer   int      `toml:"sieve-buffer"`
	WARCMaxBytes  int64    `toml:"warc-max-bytes"`
	WARCGzipLevel int      `toml:"warc-gzip-level"`
	// WARCStoreBelow: records shorter than this many bytes are stored, not
	// compressed, in their gzip member (0: every record is compressed).
	WARCStoreBelow int `toml:"warc-store-below"`
	// Operator names who runs the crawl and how to reach them, for the
	// warcinfo record of every WARC file.
	Operator string `toml:"operator"`
	// CDXJ writes a CDXJ index beside each WARC file and, at the end, the
	// merged indexes/index.cdxj.
	CDXJ      bool     `toml:"cdxj"`
	Progress  Duration `toml:"progress"`
	StopGrace Duration `toml:"stop-grace"`
	// CheckpointEvery is the interval of crash checkpoints (0: only the
	// one at the start and those asked for with SIGUSR1).
	CheckpointEvery Duration `toml:"checkpoint-every"`
	Fresh           bool     `toml:"fresh"`
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		Dir:             "./crawl",
		SystemDNS:       true,
		HostDelay:       Duration{2 * time.Second},
		IPDelay:         Duration{time.Second},
		MaxDelay:        Duration{30 * time.Second},
		CrawlDelayCap:   Duration{10 * time.Second},
		ParallelPerKey:  1,
		ParallelPerIP:   1,
		Assign:          "authority",
		FrontSize:       256,
		Scope:           string(filter.ScopeAll),
		MaxURLsPerHost:  100000,
		MaxURLLength:    2048,
		MaxLinks:        5000,
		MaxRedirects:    filter.DefaultMaxRedirects,
		MaxSegRepeats:   filter.DefaultMaxSegmentRepeats,
		NearDupBits:     DefaultNearDupDistance,
		Fetchers:        256,
		MaxIdleConns:    2048,
		Parsers:         4 * runtime.NumCPU(),
		FetchTimeout:    Duration{30 * time.Second},
		MaxBody:         8 << 20,
		MaxRetries:      2,
		RetryDelay:      Duration{2 * time.Second},
		RobotsExpiry:    Duration{24 * time.Hour},
		UserAgent:       DefaultUserAgent,
		WorkbenchSize:   512 << 20,
		URLCacheBytes:   64 << 20,
		SieveBuffer:     1 << 20,
		WARCMaxBytes:    1 << 30,
		WARCGzipLevel:   1,
		WARCStoreBelow:  store.DefaultStoreBelow,
		CDXJ:            true,
		Progress:        Duration{2 * time.Second},
		StopGrace:       Duration{10 * time.Second},
		CheckpointEvery: Duration{10 * time.Minute},
	}
}

// LoadFile reads a TOML configuration over c. Unknown keys are an error, so
// a misspelt setting is not silently ignored.
func (c *Config) LoadFile(path string) error {
	md, err := toml.DecodeFile(path, c)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return fmt.Errorf("config %s: unknown setting %q", path, und[0].String())
	}
	return nil
}

// Validate checks the settings; the error names the first wrong one.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Dir == "" {
		bad("--dir must not be empty")
	}
	if _, err := filter.ParseScopeKind(c.Scope); err != nil {
		bad("--scope: %v", err)
	}
	if c.HostDelay.Duration < 0 || c.IPDelay.Duration < 0 {
		bad("--host-delay and --ip-delay must not be negative")
	}
	if c.Fetchers < 1 || c.Fetchers > 100000 {
		bad("--fetchers must be between 1 and 100000, not %d", c.Fetchers)
	}
	if c.MaxIdleConns < 1 || c.MaxIdleConns > 100000 {
		bad("--max-idle-conns must be between 1 and 100000, not %d", c.MaxIdleConns)
	}
	if c.Parsers < 1 || c.Parsers > 4096 {
		bad("--parsers must be between 1 and 4096, not %d", c.Parsers)
	}
	if c.FetchTimeout.Duration <= 0 {
		bad("--fetch-timeout must be positive")
	}
	if c.MaxBody < 1024 {
		bad("--max-body must be at least 1024 bytes, not %d", c.MaxBody)
	}
	if c.MaxURLs < 0 || c.MaxURLsPerHost < 0 {
		bad("--max-urls and --max-urls-per-host must not be negative")
	}
	if c.MaxRetries < 0 || c.MaxRetries > 100 {
		bad("--retries must be between 0 and 100")
	}
	if c.ParallelPerKey < 1 || c.ParallelPerIP < 1 {
		bad("--parallel-per-key and --parallel-per-ip must be at least 1")
	}
	if _, err := frontier.ParseAssign(c.Assign); err != nil {
		bad("--assign: %v", err)
	}
	if c.FrontSize < 1 {
		bad("--front-size must be at least 1")
	}
	if c.DelayFactor < 0 {
		bad("--delay-factor must not be negative")
	}
	if c.MaxURLLength < 16 {
		bad("--max-url-length must be at least 16")
	}
	if c.MaxDepth < 0 || c.MaxDepth > 0xfffe {
		bad("--max-depth must be between 0 and 65534, not %d", c.MaxDepth)
	}
	if c.MaxRedirects < 1 || c.MaxRedirects > 254 {
		bad("--max-redirects must be between 1 and 254, not %d", c.MaxRedirects)
	}
	if c.MaxSegRepeats < 0 {
		bad("--max-segment-repeats must not be negative")
	}
	if c.NearDupBits < -1 || c.NearDupBits > 32 {
		bad("--near-dup-distance must be between -1 and 32, not %d", c.NearDupBits)
	}
	if c.WARCStoreBelow < 0 || c.WARCStoreBelow > 1<<20 {
		bad("--warc-store-below must be between 0 and 1048576 bytes, not %d", c.WARCStoreBelow)
	}
	if c.WARCGzipLevel < 1 || c.WARCGzipLevel > 9 {
		bad("--warc-gzip-level must be between 1 and 9")
	}
	if c.DNSServer != "" {
		if _, err := netip.ParseAddrPort(c.DNSServer); err != nil {
			bad("--dns-server %q: want IP:port", c.DNSServer)
		}
	}
	if strings.ContainsAny(c.Operator, "\r\n") {
		bad("--operator must be one line")
	}
	if c.UserAgent == "" {
		bad("--user-agent must not be empty")
	}
	if c.HostsFile != "" {
		if _, err := os.Stat(c.HostsFile); err != nil {
			bad("--hosts: %v", err)
		}
	}
	return errors.Join(errs...)
}
