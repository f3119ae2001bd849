package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrel-crawler/petrel/internal/agent"
)

// bindCrawlFlags defines the crawl flags over cfg. It is called twice when
// --config is given: once to parse the command line, once over the file's
// settings to apply the flags that were set.
func bindCrawlFlags(fs *pflag.FlagSet, cfg *agent.Config) {
	fs.StringVar(&cfg.SeedsFile, "seeds", cfg.SeedsFile, "file of seed URLs, one a line, # comments (URL arguments are seeds too)")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "crawl directory: warc/, state/, logs/ (a crawl directory that holds a crawl is resumed)")
	fs.StringVar(&cfg.HostsFile, "hosts", cfg.HostsFile, "hosts file (IP name [name...]) consulted before DNS")
	fs.BoolVar(&cfg.AllowPrivate, "allow-private", cfg.AllowPrivate, "permit loopback, private and link-local destinations")
	fs.BoolVar(&cfg.SystemDNS, "system-dns", cfg.SystemDNS, "resolve names absent from the hosts file with the system resolver (special-use names never are)")
	fs.StringVar(&cfg.DNSServer, "dns-server", cfg.DNSServer, "DNS server (IP:port) asked instead of the machine's resolv.conf servers")
	fs.DurationVar(&cfg.DNSTimeout.Duration, "dns-timeout", cfg.DNSTimeout.Duration, "timeout of one name resolution")
	fs.DurationVar(&cfg.HostDelay.Duration, "host-delay", cfg.HostDelay.Duration, "minimum gap between the end of a response and the next request to the same politeness key")
	fs.DurationVar(&cfg.IPDelay.Duration, "ip-delay", cfg.IPDelay.Duration, "minimum gap between the end of a response and the next request to the same IP address")
	fs.DurationVar(&cfg.MaxDelay.Duration, "max-delay", cfg.MaxDelay.Duration, "cap of any per-key delay (adaptive, Retry-After)")
	fs.Float64Var(&cfg.DelayFactor, "delay-factor", cfg.DelayFactor, "adaptive politeness: next delay = factor × last fetch duration, within [host-delay, max-delay] (0 = off)")
	fs.DurationVar(&cfg.CrawlDelayCap.Duration, "crawl-delay-cap", cfg.CrawlDelayCap.Duration, "robots.txt Crawl-delay is honoured up to this")
	fs.IntVar(&cfg.ParallelPerKey, "parallel-per-key", cfg.ParallelPerKey, "requests in flight per politeness key")
	fs.IntVar(&cfg.ParallelPerIP, "parallel-per-ip", cfg.ParallelPerIP, "requests in flight per IP address")
	fs.StringVar(&cfg.Assign, "assign", cfg.Assign, "queue-assignment policy, which URLs share a politeness key: authority, host, domain, ip, bucket:N or url")
	fs.IntVar(&cfg.FrontSize, "front-size", cfg.FrontSize, "visit states kept active at first (grows when fetchers wait)")
	fs.StringVar(&cfg.Scope, "scope", cfg.Scope, "which URLs are followed: all, host, domain or prefix")
	fs.Int64Var(&cfg.MaxURLs, "max-urls", cfg.MaxURLs, "fetch at most this many pages (0 = no limit)")
	fs.Int64Var(&cfg.MaxURLsPerHost, "max-urls-per-host", cfg.MaxURLsPerHost, "URLs admitted per politeness key")
	fs.IntVar(&cfg.MaxURLLength, "max-url-length", cfg.MaxURLLength, "longer URLs are not followed")
	fs.IntVar(&cfg.MaxLinks, "max-links", cfg.MaxLinks, "links followed per page (outdegree cap)")
	fs.IntVar(&cfg.MaxDepth, "max-depth", cfg.MaxDepth, "links followed from a seed (hop limit; 0 = no limit)")
	fs.IntVar(&cfg.MaxRedirects, "max-redirects", cfg.MaxRedirects, "URLs fetched per redirect chain (robots.txt: hops followed)")
	fs.IntVar(&cfg.MaxSegRepeats, "max-segment-repeats", cfg.MaxSegRepeats, "URLs whose path repeats a segment more often are not followed (0 = no rule)")
	fs.IntVar(&cfg.NearDupBits, "near-dup-distance", cfg.NearDupBits, "SimHash Hamming distance up to which a page is a near-duplicate of a recent page of its host (-1 = off)")
	fs.IntVar(&cfg.Fetchers, "fetchers", cfg.Fetchers, "fetching goroutines")
	fs.IntVar(&cfg.MaxIdleConns, "max-idle-conns", cfg.MaxIdleConns, "idle keep-alive connections kept, least recently used dropped first (lowered to fit the descriptor limit)")
	fs.IntVar(&cfg.Parsers, "parsers", cfg.Parsers, "parsing goroutines")
	fs.DurationVar(&cfg.FetchTimeout.Duration, "fetch-timeout", cfg.FetchTimeout.Duration, "timeout of a whole request")
	fs.Int64Var(&cfg.MaxBody, "max-body", cfg.MaxBody, "longer bodies are truncated (WARC-Truncated: length)")
	fs.IntVar(&cfg.MaxRetries, "retries", cfg.MaxRetries, "retries of a connection failure or 5xx")
	fs.DurationVar(&cfg.RetryDelay.Duration, "retry-delay", cfg.RetryDelay.Duration, "minimum delay before a retry")
	fs.DurationVar(&cfg.RobotsExpiry.Duration, "robots-expiry", cfg.RobotsExpiry.Duration, "how long a robots.txt is kept")
	fs.StringVar(&cfg.UserAgent, "user-agent", cfg.UserAgent, "User-Agent header; set the contact URL to yours")
	fs.Int64Var(&cfg.WorkbenchSize, "workbench-bytes", cfg.WorkbenchSize, "RAM budget of the visit-state queues")
	fs.IntVar(&cfg.URLCacheBytes, "url-cache-bytes", cfg.URLCacheBytes, "RAM of the cache of recently seen URLs")
	fs.IntVar(&cfg.SieveBuffer, "sieve-buffer", cfg.SieveBuffer, "keys buffered in RAM by the sieve between flushes")
	fs.Int64Var(&cfg.WARCMaxBytes, "warc-max-bytes", cfg.WARCMaxBytes, "WARC files rotate after this many bytes")
	fs.IntVar(&cfg.WARCGzipLevel, "warc-gzip-level", cfg.WARCGzipLevel, "gzip level of WARC records, 1 (fastest) to 9; 6 makes files 9% smaller for a third more compression CPU")
	fs.IntVar(&cfg.WARCStoreBelow, "warc-store-below", cfg.WARCStoreBelow, "records shorter than this many bytes are stored uncompressed in their gzip member (0: compress every record)")
	fs.StringVar(&cfg.Operator, "operator", cfg.Operator, "who runs the crawl and how to reach them (name, e-mail or URL), recorded in every WARC file's warcinfo")
	fs.BoolVar(&cfg.CDXJ, "cdxj", cfg.CDXJ, "write a CDXJ index beside each WARC file, and indexes/index.cdxj at the end")
	fs.DurationVar(&cfg.Progress.Duration, "progress", cfg.Progress.Duration, "interval of the progress line on stderr (0 = none)")
	fs.BoolVar(&cfg.Fresh, "fresh", cfg.Fresh, "refuse to start on a non-empty crawl directory")
	fs.DurationVar(&cfg.CheckpointEvery.Duration, "checkpoint-every", cfg.CheckpointEvery.Duration, "interval of crash checkpoints (also taken at the start, and on SIGUSR1)")
	fs.DurationVar(&cfg.StopGrace.Duration, "stop-grace", cfg.StopGrace.Duration, "at a stop, fetches in flight get this long to finish before they are abandoned")
}

func crawlCmd() *cobra.Command {
	cfg := agent.Defaults()
	var configFile string
	cmd := &cobra.Command{
		Use:   "crawl [flags] [URL...]",
		Short: "Crawl from the seeds until nothing reachable is left or a limit is hit",
		RunE: func(cmd *cobra.Command, args []string) error {
			final := cfg
			if configFile != "" {
				final = agent.Defaults()
				if err := final.LoadFile(configFile); err != nil {
					return fmt.Errorf("%w: %v", agent.ErrUsage, err)
				}
				over := pflag.NewFlagSet("over", pflag.ContinueOnError)
				bindCrawlFlags(over, &final)
				var setErr error
				cmd.Flags().Visit(func(f *pflag.Flag) {
					if f.Name == "config" {
						return
					}
					if err := over.Set(f.Name, f.Value.String()); err != nil && setErr == nil {
						setErr = err
					}
				})
				if setErr != nil {
					return flagError{setErr}
				}
			}
			final.Seeds = append(final.Seeds, args...)
			if final.SeedsFile == "" && len(final.Seeds) == 0 {
				if _, err := os.Stat(final.Dir); err != nil {
					return fmt.Errorf("%w: no seeds: give URLs, --seeds FILE, or --dir of a crawl to resume", agent.ErrUsage)
				}
			}
			a, err := agent.Open(final, os.Stderr)
			if err != nil {
				return err
			}
			usr1 := make(chan os.Signal, 1)
			signal.Notify(usr1, syscall.SIGUSR1)
			defer func() {
				signal.Stop(usr1)
				close(usr1)
			}()
			go func() {
				for range usr1 {
					a.RequestCheckpoint()
				}
			}()
			return a.Run(cmd.Context())
		},
	}
	bindCrawlFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&configFile, "config", "", "TOML file with any of these settings (flags override it)")
	return cmd
}
