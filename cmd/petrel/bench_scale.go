package main

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchscale"
)

func benchScaleCmd() *cobra.Command {
	var o benchscale.Options
	var firstIP string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Crawl the generated web (10^6 hosts, its own process) until N URLs are known, sampling memory, disk and rates",
		Long: `Crawl the generated web (petrel testweb --lazy, in its own process) with WARC on and
small politeness delays until --known URLs are known, sampling every --every: pages/s, URLs
known and queued (RAM / disk), RSS and Go heap, disk bytes by component, sieve flush
durations, checkpoint pauses, fetcher waits, CPU per page. At N a checkpoint is asked for
(SIGUSR1) and timed; then the crawl is stopped, or with --recover killed (SIGKILL) and
restarted to time its recovery. Prints a table on stderr, JSON on stdout with --json.`,
		Example: `  petrel bench scale --known 1000000 --plot scale.svg
  petrel bench scale --known 10000000 --json --work /tmp/scale > scale.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if firstIP != "" {
				a, err := netip.ParseAddr(firstIP)
				if err != nil || !a.Is4() || !a.IsLoopback() {
					return flagError{fmt.Errorf("--web-first-ip %q: want a 127.x.y.z address", firstIP)}
				}
				o.FirstIP = a
			}
			var js io.Writer
			if jsonOut {
				js = os.Stdout
			}
			return benchscale.Run(cmd.Context(), o, js, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&o.Known, "known", 1_000_000, "stop when this many URLs are known")
	fs.StringVar(&o.Petrel, "petrel", "", "petrel binary (default: this one)")
	fs.StringVar(&o.WorkDir, "work", "", "work directory (default: a temporary one, removed afterwards)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary work directory")
	fs.IntVar(&o.Hosts, "web-hosts", 0, "hosts of the generated web (default 1000000)")
	fs.IntVar(&o.PagesPerHost, "web-pages", 0, "mean pages per host (default 1000)")
	fs.IntVar(&o.Addrs, "web-ips", 0, "loopback addresses of the web (default 4096)")
	fs.IntVar(&o.LinksPerPage, "web-links", 0, "links per page (default 40)")
	fs.Int64Var(&o.Seed, "web-seed", 0, "seed of the web")
	fs.StringVar(&firstIP, "web-first-ip", "", "first loopback address (default 127.128.0.1)")
	fs.IntVar(&o.Port, "web-port", 0, "port of the web (default 80; -1 = ephemeral)")
	fs.DurationVar(&o.HostDelay, "host-delay", 0, "crawl host delay (default 100ms)")
	fs.DurationVar(&o.IPDelay, "ip-delay", 0, "crawl IP delay (default 5ms)")
	fs.DurationVar(&o.CheckpointEvery, "checkpoint-every", 0, "crawl checkpoint interval (default 5m)")
	fs.DurationVar(&o.Every, "every", 0, "sampling interval (default 5s)")
	fs.DurationVar(&o.TimeBound, "time-bound", 0, "give up after this long (default 2h)")
	fs.BoolVar(&o.Recover, "recover", false, "kill -9 the crawl after the checkpoint at N and time its recovery")
	fs.BoolVar(&o.Resume, "resume", false, "continue the crawl left in --work by an earlier run on the same web (say, one its --time-bound stopped)")
	fs.StringSliceVar(&o.CrawlArgs, "crawl-arg", nil, "extra argument of petrel crawl (repeatable), e.g. --crawl-arg=--sieve-buffer=4194304")
	fs.StringVar(&o.Plot, "plot", "", "draw the samples to this SVG file")
	fs.BoolVar(&jsonOut, "json", false, "print the report as JSON on stdout")
	return cmd
}
