package main

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchfrontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks that print JSON and a table (see BENCHMARKS.md)"}
	cmd.AddCommand(benchSieveCmd(), benchFrontierCmd(), benchCrawlCmd(), benchScaleCmd(), benchExchangeCmd(), benchEtcdCmd(), benchExtractCmd(), benchLangCmd(), benchRevisitCmd())
	return cmd
}

func benchSieveCmd() *cobra.Command {
	var o sieve.BenchOptions
	var baselines string
	cmd := &cobra.Command{
		Use:   "sieve",
		Short: "Benchmark the DRUM sieve against a Go map (and a Pebble seen-set, built with -tags petrelbench) on the same key stream",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if baselines != "" {
				o.Baselines = strings.Split(baselines, ",")
			}
			return sieve.RunBench(cmd.Context(), o, os.Stdout, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Keys, "keys", 10_000_000, "keys in the stream, duplicates included")
	fs.Float64Var(&o.DupRatio, "dup-ratio", 0.5, "fraction of the stream repeating an earlier key")
	fs.StringVar(&o.Dir, "dir", os.TempDir(), "scratch directory")
	fs.StringVar(&baselines, "baselines", sieve.BenchBaselines, "baselines to run beside the sieve (pebble only in a build with -tags petrelbench)")
	fs.BoolVar(&o.Compressed, "compressed", false, "gap-coded sorted store")
	fs.IntVar(&o.BufferKeys, "buffer-keys", 0, "keys per RAM buffer (0: default)")
	fs.DurationVar(&o.BaselineTimeout, "baseline-timeout", 10*time.Minute, "stop a baseline after this long, reporting its rate so far")
	fs.BoolVar(&o.NoSync, "no-sync", false, "skip fsync in the sieve")
	return cmd
}

func benchFrontierCmd() *cobra.Command {
	var o benchfrontier.Options
	cmd := &cobra.Command{
		Use:   "frontier",
		Short: "Benchmark the real frontier with zero-latency fake fetchers (no network)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			limitMemory(o.MemoryLimit()) // as an agent's: the Go heap held near the workbench budget
			return benchfrontier.Run(cmd.Context(), o, os.Stdout, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Keys, "keys", 100_000, "politeness keys (hosts)")
	fs.IntVar(&o.URLs, "urls", 2_000_000, "URLs scheduled in the throughput phase")
	fs.IntVar(&o.QueuedURLs, "queued", 10_000_000, "URLs queued in the memory phase (0: skip)")
	fs.DurationVar(&o.HostDelay, "host-delay", 200*time.Millisecond, "per-key delay")
	fs.DurationVar(&o.IPDelay, "ip-delay", 50*time.Millisecond, "per-IP delay")
	fs.IntVar(&o.KeysPerIP, "keys-per-ip", 1, "keys sharing one address")
	fs.IntVar(&o.Fetchers, "fetchers", 512, "fake fetchers")
	fs.Int64Var(&o.WorkbenchBytes, "workbench-bytes", 512<<20, "workbench RAM budget")
	fs.StringVar(&o.Dir, "dir", "", "scratch directory (default: a temporary one)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "bound on each phase")
	return cmd
}
