package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// bindWebFlags defines the synthetic web's shape.
func bindWebFlags(cmd *cobra.Command, c *testweb.Config, firstIP *string) {
	fs := cmd.Flags()
	fs.IntVar(&c.Hosts, "web-hosts", c.Hosts, "hosts of the synthetic web")
	fs.IntVar(&c.HostsPerIP, "web-hosts-per-ip", c.HostsPerIP, "hosts sharing one IP address")
	fs.IntVar(&c.PagesPerHost, "web-pages", c.PagesPerHost, "pages per host")
	fs.IntVar(&c.LinksPerPage, "web-links", c.LinksPerPage, "links per page")
	fs.IntVar(&c.PageBytes, "web-page-bytes", c.PageBytes, "approximate page size")
	fs.Int64Var(&c.Seed, "web-seed", c.Seed, "random seed of the synthetic web")
	fs.StringVar(firstIP, "web-first-ip", "127.31.0.1", "first loopback address to bind")
	fs.IntVar(&c.Port, "web-port", c.Port, "port on every address (0 = an ephemeral port each)")
	fs.BoolVar(&c.Hostile, "hostile", c.Hostile, "add the hostile hosts (traps, bombs, broken servers)")
}

func webConfig(c testweb.Config, firstIP string) (testweb.Config, error) {
	a, err := netip.ParseAddr(firstIP)
	if err != nil || !a.IsLoopback() {
		return c, flagError{fmt.Errorf("--web-first-ip %q: want a 127.x.y.z address", firstIP)}
	}
	c.FirstIP = a
	return c, nil
}

func testwebCmd() *cobra.Command {
	var c testweb.Config
	var firstIP, dir string
	cmd := &cobra.Command{
		Use:   "testweb",
		Short: "Serve the deterministic synthetic web on loopback (writes hosts and seeds files)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := webConfig(c, firstIP)
			if err != nil {
				return err
			}
			w, err := testweb.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer w.Close()
			hosts, seeds, err := w.WriteFiles(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "testweb: %d hosts on %d addresses; hosts file %s, seeds %s; Ctrl-C stops\n",
				len(w.Hosts()), len(w.Addrs()), hosts, seeds)
			<-cmd.Context().Done()
			return nil
		},
	}
	bindWebFlags(cmd, &c, &firstIP)
	cmd.Flags().StringVar(&dir, "out", ".", "directory for the hosts and seeds files")
	return cmd
}

func demoCmd() *cobra.Command {
	c := testweb.Config{Hosts: 60, HostsPerIP: 4, PagesPerHost: 40}
	var firstIP, dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Crawl an in-process synthetic web with progress, in under a minute (no network)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := webConfig(c, firstIP)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			w, err := testweb.Start(ctx, cfg)
			if err != nil {
				return err
			}
			defer w.Close()
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			hosts, seeds, err := w.WriteFiles(dir)
			if err != nil {
				return err
			}
			ac := agent.Defaults()
			ac.Dir = filepath.Join(dir)
			ac.HostsFile, ac.SeedsFile = hosts, seeds
			ac.AllowPrivate = true
			ac.SystemDNS = false
			ac.HostDelay.Duration = 100 * time.Millisecond
			ac.IPDelay.Duration = 20 * time.Millisecond
			ac.RetryDelay.Duration = 200 * time.Millisecond
			ac.FetchTimeout.Duration = 5 * time.Second
			ac.Progress.Duration = time.Second
			fmt.Fprintf(os.Stderr, "demo: synthetic web of %d hosts on %d loopback addresses; crawling into %s\n",
				len(w.Hosts()), len(w.Addrs()), dir)
			a, err := agent.Open(ac, os.Stderr)
			if err != nil {
				return err
			}
			if err := a.Run(ctx); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "demo: done; WARC files in %s, log in %s\n",
				filepath.Join(dir, "warc"), filepath.Join(dir, "logs", "crawl.log"))
			return nil
		},
	}
	bindWebFlags(cmd, &c, &firstIP)
	cmd.Flags().StringVar(&dir, "dir", "./demo-crawl", "crawl directory (emptied first)")
	return cmd
}
