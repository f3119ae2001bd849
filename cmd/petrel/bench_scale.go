package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchscale"
)

func benchScaleCmd() *cobra.Command {
	var o benchscale.Options
	var jsonOut bool
	web := benchWebFlags{petrel: &o.Petrel, work: &o.WorkDir, keep: &o.Keep, hosts: &o.Hosts, pages: &o.PagesPerHost,
		links: &o.LinksPerPage, port: &o.Port, webStart: &o.WebStartTimeout,
		help: benchWebHelp{hosts: "1000000", pages: "1000, a mean", links: "40", firstIP: "127.128.0.1", port: "80", webStart: "the time bound"}}
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
			var err error
			if o.FirstIP, err = web.loopbackFirstIP(true); err != nil {
				return err
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
	web.bind(fs)
	fs.IntVar(&o.Addrs, "web-ips", 0, "loopback addresses of the web (default 4096)")
	fs.Int64Var(&o.Seed, "web-seed", 0, "seed of the web")
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
