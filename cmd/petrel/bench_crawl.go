package main

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
)

func benchCrawlCmd() *cobra.Command {
	var o benchcrawl.Options
	var peers, agentIP, jsonPath string
	web := benchWebFlags{petrel: &o.Petrel, work: &o.WorkDir, keep: &o.Keep, hosts: &o.Hosts, pages: &o.PagesPerHost,
		links: &o.LinksPerPage, port: &o.Port, webStart: &o.WebStartTimeout,
		help: benchWebHelp{hosts: "2000; 400 with --politeness", pages: "50; 30 with --politeness", links: "40", firstIP: "127.90.0.1", port: "8080", webStart: "the time bound, at least 3m"}}
	cmd := &cobra.Command{
		Use:   "crawl",
		Short: "Crawl the synthetic web (served by a separate process) with Petrel, Colly, wget, Scrapy and Crawlee, against the web's own limit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if peers != "" {
				o.Peers = strings.Split(peers, ",")
			}
			var err error
			if o.FirstIP, err = web.loopbackFirstIP(false); err != nil {
				return err
			}
			if agentIP != "" {
				a, err := netip.ParseAddr(agentIP)
				if err != nil || !a.Is4() || !a.IsLoopback() {
					return flagError{fmt.Errorf("--agent-first-ip %q: want a 127.x.y.z address", agentIP)}
				}
				o.AgentFirstIP = a
			}
			jsonOut := os.Stdout
			if jsonPath != "" {
				f, err := os.Create(jsonPath)
				if err != nil {
					return err
				}
				defer f.Close()
				jsonOut = f
			}
			return benchcrawl.Run(cmd.Context(), o, jsonOut, os.Stderr)
		},
	}
	fs := cmd.Flags()
	web.bind(fs)
	fs.StringVar(&o.Shape, "shape", "", `"real": crawl the generated web shaped like the real one (petrel testweb --shape real: HTTPS, real page sizes, latency; crawlers get its --ca-file)`)
	fs.StringVar(&o.Colly, "colly", "", "built bench/colly binary (default: build it from bench/colly)")
	fs.StringVar(&o.Python, "python", "", "Python with scrapy that runs bench/scrapy (default /usr/bin/python3)")
	fs.StringVar(&o.ToolsDir, "tools-dir", "", "directory whose node_modules holds crawlee, for bench/crawlee (default $PETREL_TOOLS_DIR, else /opt/petrel-tools)")
	fs.BoolVar(&o.PolitenessBound, "politeness", false, "politeness-bound shape: 2s/1s delays, efficiency = achieved ÷ allowed rate")
	fs.IntVar(&o.HostsPerIP, "web-hosts-per-ip", 0, "hosts per address (default 4)")
	fs.IntVar(&o.PageBytes, "web-page-bytes", 0, "page size (default 20 KiB)")
	fs.DurationVar(&o.HostDelay, "host-delay", 0, "host delay for every crawler (default 100ms; 2s with --politeness)")
	fs.DurationVar(&o.IPDelay, "ip-delay", 0, "IP delay for every crawler (default 10ms; 1s with --politeness)")
	fs.StringVar(&peers, "peers", "", "comma-separated subset of petrel,colly,wget,scrapy,crawlee,limit (default all; scrapy and crawlee need python3-scrapy and crawlee in --tools-dir)")
	fs.Int64Var(&o.MaxURLs, "max-urls", 0, "page bound of petrel, colly, scrapy and crawlee (0 = none)")
	fs.DurationVar(&o.TimeBound, "time-bound", 0, "time bound per crawl (default 3m; 60s with --politeness)")
	fs.DurationVar(&o.LimitDuration, "limit-duration", 0, "wrk duration (default 10s)")
	fs.IntVar(&o.LimitAddrs, "limit-addrs", 0, "concurrent wrk processes (default 2)")
	fs.IntVar(&o.LimitConns, "limit-conns", 0, "wrk connections per address (default 32)")
	fs.IntVar(&o.Repeat, "repeat", 1, "run every crawler this many times, in rounds; report each one's median run")
	fs.StringVar(&o.Plot, "plot", "", "draw pages/s over time to this SVG file")
	fs.IntVar(&o.Agents, "agents", 0, "also crawl with this many agents of one crawl on this machine, alternating with one agent, and compare (--max-urls is shared out; peers default to petrel)")
	fs.StringVar(&agentIP, "agent-first-ip", "", "with --agents: the first agent's loopback address (default 127.216.0.1; the others take the next ones)")
	fs.IntVar(&o.AgentProcs, "agent-procs", 0, "with --agents: each agent's GOMAXPROCS (default max(1, cores ÷ agents), the cores shared out; -1 = Go's default, every core each)")
	fs.DurationVar(&o.ClusterBatchDelay, "cluster-batch-delay", 0, "with --agents: the agents' --cluster-batch-delay (default: the crawler's)")
	fs.BoolVar(&o.Ops, "ops", false, "measure the operations' overhead: every round crawls with --crawl-log=false and no console, then with the console on and polled as an open console page polls it, and compares (peers default to petrel)")
	fs.StringVar(&o.CPUProfileDir, "cpuprofile-dir", "", "write a CPU profile of every petrel crawl (each agent's too) into this directory")
	fs.StringVar(&jsonPath, "json", "", "JSON output file (default stdout)")
	return cmd
}
