package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
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
	var firstIP, dir, hitLog string
	var lz lazyFlags
	cmd := &cobra.Command{
		Use:   "testweb",
		Short: "Serve the deterministic synthetic web on loopback (writes hosts and seeds files)",
		Long: `Serve the deterministic synthetic web on loopback.

By default every page is generated at start and held in RAM, and a hosts file
names every host. With --lazy the web is generated: every page is rendered on
request from (seed, host, path) in constant memory, so --web-hosts 1000000
--web-pages 1000 (10^9 URLs) costs no more RAM than a small web; its names are
served by its own DNS server on loopback (the file "dns" in --out holds its
address, for petrel crawl --system-dns --dns-server ADDR).

With --shape real the generated web is shaped like the web a crawler meets
(HTTPS on 90 % of hosts with a certificate authority of its own, TLS 1.2 and
1.3, HTTP/2 by ALPN on some hosts, lognormal page sizes with a median of
30 KiB and a mean above 100 KB, gzip and brotli, latency per host, slow,
failing and down hosts, redirects, robots.txt everywhere; BENCHMARKS.md
states the numbers and their sources); it implies --lazy and also writes
"ca.pem" (for petrel crawl --ca-file) and "hosts" (for --hosts) in --out.`,
		Example: `  petrel testweb --out /tmp/web
  petrel testweb --lazy --web-hosts 1000000 --web-pages 1000 --out /tmp/web
  petrel testweb --shape real --web-hosts 2000 --web-pages 50 --out /tmp/web`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lz.shape != "" && lz.shape != testweb.ShapeReal {
				return flagError{fmt.Errorf("--shape %q: want %q", lz.shape, testweb.ShapeReal)}
			}
			if lz.on || lz.shape != "" {
				return runLazyWeb(cmd, c, firstIP, dir, hitLog, lz)
			}
			return runWeb(cmd, c, firstIP, dir, hitLog)
		},
	}
	bindWebFlags(cmd, &c, &firstIP)
	cmd.Flags().StringVar(&dir, "out", ".", "directory for the hosts and seeds files")
	fs := cmd.Flags()
	fs.BoolVar(&lz.on, "lazy", false, "serve the generated web (pages rendered on request, names from its DNS server)")
	fs.IntVar(&lz.addrs, "web-ips", 4096, "with --lazy: loopback addresses the hosts share (skewed)")
	fs.StringVar(&lz.dns, "web-dns", "", `with --lazy: DNS server address (default: the first address, port 0 = any); "off" for none`)
	fs.BoolVar(&lz.logHits, "web-log", false, "with --lazy: keep a request log in RAM (off: counts only)")
	fs.IntVar(&lz.seeds, "web-seeds", 100, "with --lazy: home pages written to the seeds file")
	fs.StringVar(&lz.shape, "shape", "", `"real": the generated web shaped like the real one (HTTPS, real page sizes, latency; implies --lazy)`)
	fs.IntVar(&lz.tlsPort, "web-tls-port", 0, "with --shape real: the HTTPS port on every address (0 = an ephemeral port)")
	fs.DurationVar(&c.ChangeDay, "web-change-day", 0, "make the pages change over time, each at its own rate, on a clock on which a day lasts this long, with ETag, Last-Modified and 304 answers (not with --lazy; 0 = a static web)")
	fs.DurationVar(&c.Latency, "web-latency", 0, "how long a normal host waits before it answers a request other than for robots.txt (not with --lazy)")
	fs.StringVar(&hitLog, "hit-log", "", "once stopped, write the request log to this file (JSON lines), and (not with --lazy) the expected and disallowed URLs to expected.txt and disallowed.txt in --out")
	return cmd
}

// webShutdownWait is how long petrel testweb --hit-log, stopped, waits
// for the requests being answered to finish.
const webShutdownWait = 5 * time.Second

// runWeb serves the synthetic web until the command's context ends; with
// hitLog, it writes the files a test judges a crawl by (see the flag).
func runWeb(cmd *cobra.Command, c testweb.Config, firstIP, dir, hitLog string) error {
	cfg, err := webConfig(c, firstIP)
	if err != nil {
		return err
	}
	// The web outlives the command's context: it is closed below (with
	// hitLog, once the requests being answered have finished).
	w, err := testweb.Start(context.WithoutCancel(cmd.Context()), cfg)
	if err != nil {
		return err
	}
	defer w.Close()
	hosts, seeds, err := w.WriteFiles(dir)
	if err != nil {
		return err
	}
	if hitLog != "" {
		for name, urls := range map[string][]string{"expected.txt": w.Expected(), "disallowed.txt": w.Disallowed()} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(append(urls, ""), "\n")), 0o644); err != nil {
				return err
			}
		}
	}
	cross, all := w.LinkShare()
	fmt.Fprintf(os.Stderr, "testweb: %d hosts on %d addresses, cross-host links %.1f %% of %d; hosts file %s, seeds %s; Ctrl-C stops\n",
		len(w.Hosts()), len(w.Addrs()), 100*float64(cross)/float64(max(all, 1)), all, hosts, seeds)
	fmt.Fprintf(os.Stderr, "testweb: crawl it from another shell with\n  petrel crawl --hosts %s --seeds %s --allow-private --system-dns=false --host-delay 100ms --dir ./testweb-crawl\n", hosts, seeds)
	<-cmd.Context().Done()
	if hitLog == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), webShutdownWait)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		return err // the log may lack a request being answered
	}
	if err := w.WriteHitLog(hitLog); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "testweb: request log (%d requests) in %s\n", len(w.Hits()), hitLog)
	return nil
}

// lazyFlags are the settings of "petrel testweb --lazy".
type lazyFlags struct {
	on      bool
	addrs   int
	dns     string
	logHits bool
	seeds   int
	shape   string
	tlsPort int
}

// runLazyWeb serves the generated web until the command's context ends,
// then prints its counts and, with hitLog, writes its request log there.
func runLazyWeb(cmd *cobra.Command, c testweb.Config, firstIP, dir, hitLog string, lz lazyFlags) error {
	gc := testweb.GenConfig{Hosts: c.Hosts, PagesPerHost: c.PagesPerHost, LinksPerPage: c.LinksPerPage,
		PageBytes: c.PageBytes, Addrs: lz.addrs, Seed: c.Seed, Port: c.Port, Shape: lz.shape, TLSPort: lz.tlsPort}
	if lz.shape != "" && !cmd.Flags().Changed("web-ips") {
		gc.Addrs = 0 // the shape's default
	}
	if cmd.Flags().Changed("web-first-ip") {
		a, err := netip.ParseAddr(firstIP)
		if err != nil || !a.Is4() || !a.IsLoopback() {
			return flagError{fmt.Errorf("--web-first-ip %q: want a 127.x.y.z address", firstIP)}
		}
		gc.FirstIP = a
	}
	g, err := testweb.NewGen(gc)
	if err != nil {
		return flagError{err}
	}
	opts := testweb.GenServeOptions{LogHits: lz.logHits || hitLog != "", DNS: lz.dns}
	switch lz.dns {
	case "off":
		opts.DNS = ""
	case "":
		opts.DNS = g.Config().FirstIP.String() + ":0"
	}
	w, err := testweb.StartGen(cmd.Context(), g.Config(), opts)
	if err != nil {
		return err
	}
	defer w.Close()
	seeds, dnsPath, err := w.WriteFiles(dir, lz.seeds)
	if err != nil {
		return err
	}
	names := "--system-dns --dns-server " + w.DNSAddr()
	if lz.shape != "" {
		ca, hosts, err := w.WriteRealFiles(dir)
		if err != nil {
			return err
		}
		if w.DNSAddr() == "" {
			names = "--system-dns=false --hosts " + hosts
		}
		names += " --ca-file " + ca
		fmt.Fprintf(os.Stderr, "testweb: certificate authority %s, hosts file %s\n", ca, hosts)
	}
	fmt.Fprintf(os.Stderr, "testweb: %s; DNS %s (address in %s), seeds %s; Ctrl-C stops\n", w, w.DNSAddr(), dnsPath, seeds)
	fmt.Fprintf(os.Stderr, "testweb: crawl it from another shell with\n  petrel crawl %s --seeds %s --allow-private --host-delay 100ms --dir ./testweb-crawl\n", names, seeds)
	<-cmd.Context().Done()
	ct := w.Counts()
	fmt.Fprintf(os.Stderr, "testweb: served %d requests: %d pages, %d robots.txt, %d not found, %d misdirected, %d body bytes; %d DNS answers\n",
		ct.Requests, ct.Pages, ct.Robots, ct.NotFound, ct.Misdirected, ct.Bytes, ct.DNSQueries)
	if lz.shape != "" {
		fmt.Fprintf(os.Stderr, "testweb: %d over TLS, %d over HTTP/2, %d redirects, %d failures (503), %d dropped, %d gzip, %d brotli\n",
			ct.TLS, ct.HTTP2, ct.Redirects, ct.Failures, ct.Dropped, ct.Gzip, ct.Brotli)
	}
	if hitLog == "" {
		return nil
	}
	w.Close()
	if err := w.WriteHitLog(hitLog); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "testweb: request log (%d requests) in %s\n", len(w.Hits()), hitLog)
	return nil
}

func demoCmd() *cobra.Command {
	c := testweb.Config{Hosts: 60, HostsPerIP: 4, PagesPerHost: 40}
	var firstIP, dir string
	var force bool
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
			if err := clearDemoDir(dir, force); err != nil {
				return err
			}
			hosts, seeds, err := w.WriteFiles(dir)
			if err != nil {
				return err
			}
			ac := agent.Defaults()
			ac.Dir = filepath.Join(dir)
			ac.Fetch.HostsFile, ac.SeedsFile = hosts, seeds
			ac.Fetch.AllowPrivate = true
			ac.Fetch.SystemDNS = false
			ac.Frontier.HostDelay = 100 * time.Millisecond
			ac.Frontier.IPDelay = 20 * time.Millisecond
			ac.Frontier.RetryDelay = 200 * time.Millisecond
			ac.Fetch.Timeout = 5 * time.Second
			ac.Progress = time.Second
			go newMemoryLimit(&ac, os.Stderr).follow(ctx, memoryLimitEvery)
			fmt.Fprintf(os.Stderr, "demo: synthetic web of %d hosts on %d loopback addresses; crawling into %s\n",
				len(w.Hosts()), len(w.Addrs()), dir)
			a, err := agent.Open(ac, os.Stderr)
			if err != nil {
				return err
			}
			if err := a.Run(ctx); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "demo: done; WARC files in %s, crawl log in %s, refused URLs in %s, events in %s\n",
				filepath.Join(dir, "warc"), filepath.Join(dir, "logs", "crawl.log"),
				filepath.Join(dir, "logs", "skipped.jsonl"), filepath.Join(dir, "logs", "events.jsonl"))
			fmt.Fprint(os.Stderr, demoNext(dir, w.Seeds()[0], selfCommand()))
			return nil
		},
	}
	bindWebFlags(cmd, &c, &firstIP)
	cmd.Flags().StringVar(&dir, "dir", "./demo-crawl", "crawl directory (emptied first if it holds an earlier demo)")
	cmd.Flags().BoolVar(&force, "force", false, "empty --dir even if it is not an earlier demo's")
	return cmd
}

// demoMarker is the file that marks a directory as a demo's.
const demoMarker = ".petrel-demo"

// clearDemoDir empties dir for a demo: an absent or empty directory, or an
// earlier demo's (it holds demoMarker); any other only with force, so that
// --dir never empties a directory of the user's by mistake.
func clearDemoDir(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return flagError{fmt.Errorf("demo --dir %s: %v", dir, err)}
	}
	if len(ents) > 0 && !force {
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return flagError{fmt.Errorf("demo --dir %s is not empty and not an earlier demo's; choose another directory, or add --force to empty it", dir)}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, demoMarker), []byte("a petrel demo's crawl directory; petrel demo empties it\n"), 0o644)
}

// demoNext tells what to try after the demo, as commands that run petrel
// the way it was run (self: see selfCommand).
func demoNext(dir, seed, self string) string {
	next := fmt.Sprintf(`
next:
  what was stored:    %[3]s warc ls %[1]s/warc/*.warc.gz
  a stored page:      %[3]s warc cat --body --dir %[1]s %[2]s
  crawl it yourself:  %[3]s testweb --out /tmp/web   (it prints the crawl command)
  every setting:      %[3]s crawl --help
`, dir, seed, self)
	if self == goRun {
		next += "  (each go run links petrel again; go build -o petrel ./cmd/petrel once, then ./petrel ...)\n"
	}
	return next
}

// goRun is how the README runs petrel without building it.
const goRun = "go run ./cmd/petrel"

// selfCommand is how to run this petrel again: goRun when it is a binary
// that go run built (in a go-build temporary directory), else the name it
// was run by ("./petrel", or "petrel" found on PATH).
func selfCommand() string {
	exe, _ := os.Executable()
	return commandFor(exe, os.Args[0])
}

// commandFor is selfCommand for the executable exe run as arg0.
func commandFor(exe, arg0 string) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return goRun
	}
	if arg0 == "" {
		return "petrel"
	}
	return arg0
}
