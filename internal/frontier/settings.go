package frontier

import (
	"time"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// MaxWait bounds each delay setting (HostDelay, IPDelay, MaxDelay,
// CrawlDelayCap, RetryDelay): a longer one is refused, by the settings
// table and by Reconfigure.
const MaxWait = time.Hour

// Settings are the frontier's settings of a crawl, declared in Table;
// Config embeds them. A zero field takes the default New gives it.
type Settings struct {
	HostDelay      time.Duration // gap from end of a response to the next request, per key
	IPDelay        time.Duration // the same per IP address
	MaxDelay       time.Duration // cap of any per-key delay (Crawl-delay, Retry-After, adaptive)
	DelayFactor    float64       // adaptive politeness: next delay = factor × last fetch duration (0 = off)
	CrawlDelayCap  time.Duration // robots.txt Crawl-delay honoured up to this
	ParallelPerKey int           // requests in flight per visit state (default 1)
	ParallelPerIP  int           // requests in flight per workbench entry (default 1)
	MaxURLs        int64         // stop after dispatching this many page fetches over the crawl's runs (0 = no limit; see Config.Stats)
	MaxURLsPerKey  int64         // per-key budget (BUbiNG's maxUrlsPerSchemeAuthority)
	MaxRetries     int           // retries of a failed fetch (5xx, or a failure after the connection was made)
	RetryDelay     time.Duration // minimum wait before a retry
	// HostDownBackoff caps the wait of a key whose host is unreachable:
	// it doubles from the key's delay at each failed try up to this.
	HostDownBackoff time.Duration
	// HostDownGiveUp: a host unreachable for this long is given up, its
	// URLs dropped (DropHostDown).
	HostDownGiveUp time.Duration
	RobotsExpiry   time.Duration // robots.txt kept this long
	WorkbenchBytes int64         // RAM budget of visit-state queues; beyond it queues are virtualized
	FrontSize      int           // initial required front: visit states kept active (default 256)
	Assign         Assign        // queue-assignment policy (default: scheme+authority)
	RobotsCache    int           // robots.txt states held in RAM over Config.RobotsStore (robots.go)
	HostCache      int           // host names the DNS stage holds beyond those of visit states (dns.go)
}

// Table declares the frontier's settings, bound to s.
func (s *Settings) Table() settings.Table {
	const keysFixed = "the politeness keys of queued URLs were computed with it"
	return settings.Table{
		settings.Duration(&s.HostDelay, "host-delay", 2*time.Second,
			"minimum gap between the end of a response and the next request to the same politeness key").
			In(settings.Politeness).Range(time.Duration(0), MaxWait).SetLive().ClusterWide(),
		settings.Duration(&s.IPDelay, "ip-delay", time.Second,
			"minimum gap between the end of a response and the next request to the same IP address").
			In(settings.Politeness).Range(time.Duration(0), MaxWait).SetLive().ClusterWide(),
		settings.Duration(&s.MaxDelay, "max-delay", 30*time.Second,
			"cap of any per-key delay (adaptive, Retry-After)").
			In(settings.Politeness).Range(time.Millisecond, MaxWait).SetLive().ClusterWide(),
		settings.Float(&s.DelayFactor, "delay-factor", 0,
			"adaptive politeness: next delay = F × the last fetch's duration, within [host-delay, max-delay] (0 = off)").
			In(settings.Politeness).Range(0.0, 1000.0).SetLive().ClusterWide(),
		settings.Duration(&s.CrawlDelayCap, "crawl-delay-cap", 10*time.Second,
			"robots.txt Crawl-delay is honoured up to this").
			In(settings.Politeness).Range(time.Millisecond, MaxWait).SetLive().ClusterWide(),
		settings.Count(&s.ParallelPerKey, "parallel-per-key", 1, "requests in flight per politeness key").
			In(settings.Politeness).Range(1, 1000).SetLive().ClusterWide(),
		settings.Count(&s.ParallelPerIP, "parallel-per-ip", 1, "requests in flight per IP address").
			In(settings.Politeness).Range(1, 1000).SetLive().ClusterWide(),
		settings.Text(&s.Assign, "assign", "host", []string{"authority", "host", "domain", "ip", "bucket:16", "url"},
			"which URLs share a politeness key: authority, host, domain, ip, bucket:N or url").
			WithUnit("POLICY").
			WithDoc("which URLs share a politeness key: `host` (the host name, whatever the scheme and port: a host's http:// and https:// URLs, and its robots.txt of each, keep one delay; as Heritrix), `authority` (scheme+host+port, as BUbiNG), `domain` (registered domain), `ip` (the resolved address), `bucket:N` (hash of the authority mod N), `url` (each URL its own key; only the IP rule limits the rate)").
			In(settings.Politeness).SetFixed(keysFixed).ClusterWide(),
		settings.Count(&s.FrontSize, "front-size", 256, "visit states kept active at first (grows when fetchers wait)").
			WithDoc("visit states kept active at first; grows when fetchers wait (BUbiNG's required front)").
			In(settings.Fetching).AtLeast(1).SetFixed("the front grows by itself when fetchers wait"),
		settings.Count(&s.MaxURLs, "max-urls", 0, "fetch at most this many pages in all, counted over the crawl's stops and restarts (0 = no limit; per agent in a cluster)").
			In(settings.Limits).AtLeast(int64(0)).SetLive(),
		settings.Count(&s.MaxURLsPerKey, "max-urls-per-host", 100000, "URLs admitted per politeness key").
			WithDoc("URLs admitted per politeness key (BUbiNG's maxUrlsPerSchemeAuthority)").
			In(settings.Limits).AtLeast(int64(0)).SetLive().ClusterWide(),
		settings.Count(&s.MaxRetries, "retries", 2, "retries of a 5xx or of a failure after the connection was made (a host that cannot be reached waits instead: --host-down-backoff)").
			In(settings.Fetching).Range(0, 100).SetLive().ClusterWide(),
		settings.Duration(&s.RetryDelay, "retry-delay", 2*time.Second, "minimum delay before a retry").
			In(settings.Fetching).Range(time.Duration(0), MaxWait).SetLive().ClusterWide(),
		settings.Duration(&s.HostDownBackoff, "host-down-backoff", 5*time.Minute,
			"cap of the wait of a host that refuses connections or times out connecting: it doubles from the host delay at each failed try, its URLs kept queued").
			In(settings.Fetching).Range(10*time.Millisecond, MaxWait).SetLive().ClusterWide(),
		settings.Duration(&s.HostDownGiveUp, "host-down-give-up", time.Hour,
			"a host unreachable this long is given up: its URLs are dropped and logged to skipped.jsonl (petrel crawl --retry-failed fetches them again)").
			In(settings.Fetching).Range(time.Second, 30*24*time.Hour).SetLive().ClusterWide(),
		settings.Duration(&s.RobotsExpiry, "robots-expiry", 24*time.Hour, "how long a robots.txt is kept").
			In(settings.Fetching).Range(time.Second, 30*24*time.Hour).SetLive().ClusterWide(),
		settings.Size(&s.WorkbenchBytes, "workbench-bytes", 512<<20, "RAM budget of the visit-state queues").
			In(settings.Limits).AtLeast(int64(1024)).SetLive(),
		settings.Count(&s.RobotsCache, "robots-cache", 16384,
			"robots.txt states held in RAM; the others wait in the crawl directory's robots store, read back when their host is met again").
			In(settings.Limits).AtLeast(1).SetFixed("the robots table is sized with it at the start"),
		settings.Count(&s.HostCache, "host-cache", 16384,
			"host names the DNS stage holds beyond those of visit states and those being resolved; the others are resolved again when met again").
			In(settings.Limits).AtLeast(1).SetFixed("the DNS stage is sized with it at the start"),
	}
}

// MarshalText returns the policy as --assign spells it.
func (a Assign) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an --assign value (ParseAssign).
func (a *Assign) UnmarshalText(b []byte) error {
	v, err := ParseAssign(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
