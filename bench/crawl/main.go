// Command crawl runs Petrel's crawl benchmark (package benchcrawl) until
// "petrel bench crawl" is wired to it:
//
//	go build -o /tmp/petrel ./cmd/petrel
//	go run ./bench/crawl --petrel /tmp/petrel --plot crawl.svg --max-urls 60000
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
)

func main() {
	var o benchcrawl.Options
	var peers, firstIP, jsonPath string
	flag.StringVar(&o.Petrel, "petrel", "", "petrel binary")
	flag.StringVar(&o.Colly, "colly", "", "built bench/colly binary (default: build it)")
	flag.StringVar(&o.WorkDir, "work", "", "work directory (default: a temporary one)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the work directory")
	flag.BoolVar(&o.PolitenessBound, "politeness", false, "politeness-bound mode (2s/1s)")
	flag.IntVar(&o.Hosts, "web-hosts", 0, "hosts")
	flag.IntVar(&o.HostsPerIP, "web-hosts-per-ip", 0, "hosts per address")
	flag.IntVar(&o.PagesPerHost, "web-pages", 0, "pages per host")
	flag.IntVar(&o.LinksPerPage, "web-links", 0, "links per page")
	flag.IntVar(&o.PageBytes, "web-page-bytes", 0, "page size")
	flag.StringVar(&firstIP, "web-first-ip", "", "first loopback address")
	flag.IntVar(&o.Port, "web-port", 0, "port (-1 = ephemeral)")
	flag.DurationVar(&o.HostDelay, "host-delay", 0, "host delay")
	flag.DurationVar(&o.IPDelay, "ip-delay", 0, "IP delay")
	flag.StringVar(&peers, "peers", "", "comma-separated: petrel,colly,wget,limit")
	flag.Int64Var(&o.MaxURLs, "max-urls", 0, "page bound of petrel and colly")
	flag.DurationVar(&o.TimeBound, "time-bound", 0, "time bound per crawl")
	flag.DurationVar(&o.LimitDuration, "limit-duration", 0, "wrk duration")
	flag.IntVar(&o.LimitAddrs, "limit-addrs", 0, "wrk processes (addresses)")
	flag.IntVar(&o.LimitConns, "limit-conns", 0, "wrk connections per address")
	flag.StringVar(&o.Plot, "plot", "", "SVG output")
	flag.StringVar(&jsonPath, "json", "", "JSON output file (default stdout)")
	flag.Parse()
	if peers != "" {
		o.Peers = strings.Split(peers, ",")
	}
	if firstIP != "" {
		a, err := netip.ParseAddr(firstIP)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		o.FirstIP = a
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	jsonOut := os.Stdout
	if jsonPath != "" {
		f, err := os.Create(jsonPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		jsonOut = f
	}
	if err := benchcrawl.Run(ctx, o, jsonOut, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
