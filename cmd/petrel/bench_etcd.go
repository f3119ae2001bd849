package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchetcd"
)

func benchEtcdCmd() *cobra.Command {
	var o benchetcd.Options
	var asJSON, serve bool
	var ip, work, keyFile, coordinator, dir string
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "The load of the crawl's coordination on one etcd coordinator (its own process): simulated agents keeping leases, publishing figures, watching views, a leave and return every --view-every; writes/s, the coordinator's CPU and RSS, latencies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serve {
				addr, err := netip.ParseAddrPort(coordinator)
				if err != nil {
					return flagError{fmt.Errorf("--coordinator %q: want IP:PORT", coordinator)}
				}
				return benchetcd.Serve(cmd.Context(), keyFile, addr, dir, os.Stdin, os.Stdout)
			}
			a, err := netip.ParseAddr(ip)
			if err != nil || !a.IsLoopback() {
				return flagError{fmt.Errorf("--coordinator-ip %q: want a 127.x.y.z address", ip)}
			}
			return runBenchEtcd(cmd, o, a, work, asJSON)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Agents, "agents", 100, "simulated agents")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "the measured window (after every agent is in the first view)")
	fs.DurationVar(&o.PublishEvery, "publish-every", 2*time.Second, "each agent publishes its figures this often, ±20 %")
	fs.DurationVar(&o.ViewEvery, "view-every", 60*time.Second, "one agent leaves and returns this often (two view changes), the first at half of it")
	fs.DurationVar(&o.TTL, "ttl", 10*time.Second, "the agents' lease TTL (whole seconds)")
	fs.DurationVar(&o.Settle, "settle", time.Second, "the view writer's wait for more joins before writing a view with a new agent")
	fs.StringVar(&o.Watch, "watch", benchetcd.WatchAgent, "what each agent watches: agent (the crawl's keys but the figures, as agents do) or prefix (every key, figures included, as the writer of views does)")
	fs.StringVar(&ip, "coordinator-ip", "127.0.77.1", "the coordinator's loopback address")
	fs.StringVar(&work, "work", "", "work directory (default: a temporary one, removed afterwards)")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON instead of a table")
	fs.BoolVar(&serve, "serve", false, "internal: run as the coordinator")
	fs.StringVar(&keyFile, "key-file", "", "internal: the coordinator's crawl key")
	fs.StringVar(&coordinator, "coordinator", "", "internal: the coordinator's client address")
	fs.StringVar(&dir, "dir", "", "internal: the coordinator's directory")
	for _, h := range []string{"serve", "key-file", "coordinator", "dir"} {
		fs.MarkHidden(h)
	}
	return cmd
}

// runBenchEtcd starts the coordinator as a child process of this binary,
// runs the simulation against it, and prints the result.
func runBenchEtcd(cmd *cobra.Command, o benchetcd.Options, ip netip.Addr, work string, asJSON bool) error {
	if work == "" {
		d, err := os.MkdirTemp("", "petrel-bench-etcd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	o.Log = func(s string) { fmt.Fprintln(os.Stderr, s) }
	p, err := benchetcd.StartProcess(cmd.Context(), os.Args[0], []string{"bench", "etcd", "--serve"}, ip, work)
	if err != nil {
		return err
	}
	res, err := benchetcd.Run(cmd.Context(), o, p.Target)
	if serr := p.Stop(); err == nil && serr != nil {
		err = fmt.Errorf("the coordinator: %w", serr)
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteTable(cmd.OutOrStdout())
}
