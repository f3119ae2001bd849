package agent

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/filter"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/settings"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/store"
)

// Version is Petrel's version, reported in the user agent and WARC files.
const Version = "0.1.0"

// DefaultUserAgent names Petrel, its version and a contact placeholder that
// the operator is told to replace.
const DefaultUserAgent = "Petrel/" + Version + " (+https://example.invalid/set-your-contact-url)"

// Config is every setting of a crawl: the agent's own, and those of the
// parts it wires, each declared in its package (Table joins them). The TOML
// file given with --config uses the flags' names, and flags override it.
type Config struct {
	SeedURLs        []string // seed URLs (the command line's arguments are added)
	SeedsFile       string   // one URL a line, # comments
	Dir             string
	Fresh           bool
	RetryFailed     bool // on resume, queue the URLs given up after failures again (failedlog.go)
	UserAgent       string
	Fetchers        int
	Parsers         int
	MaxLinks        int  // links followed per page
	MaxEmbedHops    int  // requisite hops after the last link hop (0: no requisites)
	MaxCSSHops      int  // the same for what style sheets name (at least MaxEmbedHops)
	EmbedsOffScope  bool // requisites pass the scope
	JSLiterals      bool // scripts' string literals that look like requisites are requisites
	Sitemaps        bool // read robots.txt's Sitemap lines and the seeds' hosts' /sitemap.xml
	NearDupBits     int  // SimHash Hamming distance of a near-duplicate (-1 = no check)
	Progress        time.Duration
	StopGrace       time.Duration
	CheckpointEvery time.Duration // interval of crash checkpoints (0: only at the start and on SIGUSR1)
	// Operator names who runs the crawl and how to reach them, for the
	// warcinfo record of every WARC file.
	Operator string

	// Given names the settings given explicitly on the command line: they
	// win over the settings changed while an earlier run of the crawl ran
	// (saved in state/). It is not a setting.
	Given []string
	// Clock is the crawl's time for the frontier's scheduler and the
	// agent's periodic loops (checkpoints, progress); nil is the system
	// clock. It is not a setting: tests give one they move by hand.
	Clock clock.Clock

	Frontier frontier.Settings
	Fetch    fetch.Settings
	Filter   filter.Settings
	Sieve    sieve.Settings
	Store    store.Settings
	Logs     crawllog.Settings
	Console  console.Settings
	Cluster  cluster.Settings // empty Cluster.Bind: a crawl of one agent
	Revisit  revisit.Settings // --revisit and its policy
}

// Table returns every setting of the crawl, bound to c.
func (c *Config) Table() settings.Table {
	return settings.Join(c.table(), c.Frontier.Table(), c.Fetch.Table(), c.Filter.Table(), c.Sieve.Table(), c.Store.Table(), c.Logs.Table(), c.Console.Table(), c.Cluster.Table(), c.Revisit.Table())
}

// table declares the agent's own settings.
func (c *Config) table() settings.Table {
	const atStart = "read once at the start"
	return settings.Table{
		settings.String(&c.SeedsFile, "seeds", "", "file of seed URLs, one a line, # comments (URL arguments are seeds too)").
			WithUnit("FILE").WithDoc("seed URLs, one a line, `#` comments; URL arguments are seeds too").
			In(settings.Seeds).SetFixed(atStart),
		settings.List(&c.SeedURLs, "seed-urls", nil, "seed URLs, comma-separated (URL arguments are added)").
			WithUnit("URL,...").In(settings.Seeds).SetFixed(atStart),
		settings.String(&c.Dir, "dir", "./crawl", "crawl directory: warc/, state/, logs/ (a crawl directory that holds a crawl is resumed)").
			WithUnit("DIR").WithDoc("crawl directory; one that holds a crawl is resumed").
			In(settings.Storage).SetFixed("it holds the crawl").
			Check(func() error {
				if c.Dir == "" {
					return fmt.Errorf("must not be empty")
				}
				return nil
			}),
		settings.Bool(&c.Fresh, "fresh", false, "refuse to start on a non-empty crawl directory").
			In(settings.Storage).SetFixed(atStart),
		settings.Bool(&c.RetryFailed, "retry-failed", false, "on resume, fetch again the URLs given up after failures (host down, tries used up; state/failed)").
			In(settings.Storage).SetFixed(atStart),
		settings.String(&c.UserAgent, "user-agent", DefaultUserAgent, "User-Agent header; set the contact URL to yours").
			WithUnit("S").ShowDefault("Petrel/VERSION (+placeholder)").
			In(settings.Fetching).SetFixed("robots.txt rules were chosen for it").ClusterWide().
			Check(func() error {
				if c.UserAgent == "" {
					return fmt.Errorf("must not be empty")
				}
				return nil
			}),
		settings.String(&c.Operator, "operator", "",
			"who runs the crawl and how to reach them (name, e-mail or URL), recorded in every WARC file's warcinfo").
			WithDoc("who runs the crawl and how to reach them, recorded in every WARC file's `warcinfo` record").
			In(settings.Storage).SetFixed("the open WARC file's warcinfo names it").
			Check(func() error {
				if strings.ContainsAny(c.Operator, "\r\n") {
					return fmt.Errorf("must be one line")
				}
				return nil
			}),
		settings.Count(&c.Fetchers, "fetchers", 256, "fetching goroutines").
			In(settings.Fetching).Range(1, 100000).SetLive(),
		settings.Count(&c.Parsers, "parsers", 4*runtime.NumCPU(), "parsing goroutines").
			WithDoc("parsing goroutines; each also waits for its page's WARC records to be compressed and written, so more than one per CPU keeps the CPUs busy").
			MachineDefault("4 × CPUs").In(settings.Fetching).Range(1, 4096).SetLive(),
		settings.Count(&c.MaxLinks, "max-links", 5000, "links followed per page (outdegree cap)").
			In(settings.Limits).Range(0, 1<<20).SetLive().ClusterWide(),
		settings.Count(&c.MaxEmbedHops, "max-embed-hops", 2,
			"page requisites (images, style sheets, scripts, fonts) fetched up to this many hops after the last link hop (0 = none; what style sheets name: --max-css-hops); those beyond are counted and logged, not fetched").
			In(settings.Limits).Range(0, 16).SetFixed("the parsers read it without synchronisation").ClusterWide(),
		settings.Count(&c.MaxCSSHops, "max-css-hops", 10,
			"what style sheets name (@import and url() chains of any kind) is fetched up to this many hops after the last link hop (never fewer than --max-embed-hops); what is beyond is counted and logged, not fetched").
			In(settings.Limits).Range(0, 64).SetFixed("the parsers read it without synchronisation").ClusterWide(),
		settings.Bool(&c.EmbedsOffScope, "embeds-off-scope", true,
			"fetch the requisites of in-scope pages even off the scope (a CDN's assets)").
			In(settings.Limits).SetFixed("the parsers read it without synchronisation").ClusterWide(),
		settings.Bool(&c.JSLiterals, "js-literals", true,
			"take as requisites the string literals of scripts (fetched, and a page's inline <script> blocks) that look like the path of an image, style sheet, script or font (at most 100 a script; no code is run)").
			In(settings.Limits).SetFixed("the parsers read it without synchronisation").ClusterWide(),
		settings.Bool(&c.Sitemaps, "sitemaps", false,
			"read the sitemaps that robots.txt files name and the /sitemap.xml of the seeds' hosts, and follow their URLs").
			In(settings.Seeds).SetFixed("sitemaps are enqueued at the start and with robots.txt").ClusterWide(),
		settings.Count(&c.NearDupBits, "near-dup-distance", DefaultNearDupDistance,
			"SimHash Hamming distance up to which a page is a near-duplicate of a recent page of its host (-1 = off)").
			In(settings.Limits).Range(-1, 32).SetFixed("recent fingerprints were compared with it").ClusterWide(),
		settings.Duration(&c.Progress, "progress", 2*time.Second, "interval of the progress line on stderr (0 = none)").
			In(settings.Operations).Range(time.Duration(0), time.Hour).SetLive(),
		settings.Duration(&c.CheckpointEvery, "checkpoint-every", 10*time.Minute,
			"interval of crash checkpoints (also taken at the start, and on SIGUSR1; 0 = only those)").
			In(settings.Operations).Range(time.Duration(0), 24*time.Hour).SetLive(),
		settings.Duration(&c.StopGrace, "stop-grace", 10*time.Second,
			"at a stop, fetches in flight get this long to finish before they are abandoned").
			In(settings.Operations).Range(time.Duration(0), time.Hour).SetLive(),
	}
}

// Defaults returns the default configuration.
func Defaults() Config {
	var c Config
	c.Table().Reset()
	return c
}

// LoadFile reads a TOML configuration over c. Unknown keys are an error
// naming the key and its line, so a misspelt setting is not silently
// ignored.
func (c *Config) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %v", err)
	}
	return c.Table().LoadTOML(path, b)
}

// Validate checks the settings; the error, one line, names the first wrong
// one.
func (c *Config) Validate() error { return c.Table().Validate() }

// MemoryBudget is the heap a crawl with these settings needs: the
// workbench budget, the URL cache, the idle keep-alive connections (their
// 32 KiB read buffers and more, ~48 KiB each) plus a fixed allowance for
// buffers and filters. The command sets it as the process's soft memory
// limit (the GC works harder near it; it never fails an allocation).
func (c *Config) MemoryBudget() int64 {
	return c.Frontier.WorkbenchBytes + 192<<20 + int64(c.URLCacheBytes()) + int64(c.Fetch.MaxIdleConns)*48<<10
}

// urlCachePerPage is the URL cache room given to each page a crawl may
// fetch: 16 URL hashes (8 bytes each), about the distinct new links a page
// brings.
const urlCachePerPage = 128

// URLCacheBytes is the size of the URL cache: --url-cache-bytes, or less
// when --max-urls bounds the crawl (16 hashes a page it may fetch, at
// least 1 MiB), so that a small crawl does not hold a cache it cannot
// fill.
func (c *Config) URLCacheBytes() int {
	n := c.Sieve.URLCacheBytes
	if m := c.Frontier.MaxURLs; m > 0 && m < int64(n/urlCachePerPage) {
		n = max(int(m)*urlCachePerPage, 1<<20)
		n = min(n, c.Sieve.URLCacheBytes)
	}
	return n
}
