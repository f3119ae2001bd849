// Command colly is the Colly-based peer crawler of Petrel's crawl benchmark
// (petrel bench crawl). It lives in its own Go module so that Petrel does not depend on
// Colly.
//
// It crawls the synthetic web from a seeds file with the politeness Colly can
// express: one LimitRule per host name (Parallelism 1, Delay = host delay),
// robots.txt obeyed. Colly cannot express a per-IP-address delay (a rule is
// matched against the host name, and only the first matching rule applies),
// so --ip-delay is accepted and ignored; the harness reports that. Names are
// resolved only through the hosts file: the transport's dialer maps each
// name to its address and never calls the system resolver; a name missing
// from the hosts file fails. It stores nothing.
//
// Every --progress interval it prints a line "pages N (R/s)" on stderr, and
// at the end one JSON line on stdout: {"pages":N,"errors":E,"elapsed_s":S,...}.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "colly-bench:", err)
		os.Exit(1)
	}
}

// result is the final JSON line.
type result struct {
	Pages     int64   `json:"pages"`
	Errors    int64   `json:"errors"`
	Robots    int64   `json:"robots_blocked"`
	Bytes     int64   `json:"bytes_received"`
	ElapsedS  float64 `json:"elapsed_s"`
	Stopped   bool    `json:"stopped"`
	Hosts     int     `json:"hosts"`
	IPDelayOK bool    `json:"ip_delay_honoured"`
}

func run() error {
	hostsFile := flag.String("hosts", "", "hosts file (IP name [name...]); the only name source")
	seedsFile := flag.String("seeds", "", "seeds file, one URL a line, # comments")
	hostDelay := flag.Duration("host-delay", 100*time.Millisecond, "delay between requests to one host (LimitRule.Delay)")
	_ = flag.Duration("ip-delay", 10*time.Millisecond, "accepted for symmetry; Colly cannot express a per-IP delay")
	maxPages := flag.Uint("max-urls", 0, "stop after this many requests (0 = no limit)")
	progress := flag.Duration("progress", time.Second, "interval of the progress line on stderr (0 = none)")
	verbose := flag.Bool("v", false, "log every failed fetch on stderr")
	caFile := flag.String("ca-file", "", "PEM file of roots trusted besides the system's")
	ua := flag.String("user-agent", "petrel-bench-colly/1.0", "User-Agent (robots.txt groups are matched by prefix)")
	flag.Parse()
	if *hostsFile == "" || *seedsFile == "" {
		return errors.New("--hosts and --seeds are required")
	}
	names, err := readHosts(*hostsFile)
	if err != nil {
		return err
	}
	seeds, err := readSeeds(*seedsFile)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tlsConfig, err := rootsConfig(*caFile)
	if err != nil {
		return err
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip, ok := names[strings.ToLower(host)]
			if !ok {
				return nil, fmt.Errorf("dial %s: name not in hosts file", host)
			}
			return dialer.DialContext(ctx, network, net.JoinHostPort(ip, port))
		},
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 2,
		MaxIdleConns:        4096,
		IdleConnTimeout:     30 * time.Second,
	}

	c := colly.NewCollector(
		colly.Async(true),
		colly.UserAgent(*ua),
		colly.MaxRequests(uint32(*maxPages)),
	)
	c.IgnoreRobotsTxt = false
	c.WithTransport(tr)
	c.SetRequestTimeout(10 * time.Second)
	// One rule per host: a single glob rule would share one Parallelism
	// slot among all hosts it matches.
	// Rules match the URL's host, which carries the port when the URL does.
	suffix := ""
	for _, s := range seeds {
		if u, err := url.Parse(s); err == nil && u.Port() != "" {
			suffix = ":*"
		}
	}
	for name := range names {
		if err := c.Limit(&colly.LimitRule{DomainGlob: name + suffix, Parallelism: 1, Delay: *hostDelay}); err != nil {
			return fmt.Errorf("limit rule %s: %w", name, err)
		}
	}

	var pages, errs, robots, bytes atomic.Int64
	c.OnResponse(func(r *colly.Response) {
		pages.Add(1)
		bytes.Add(int64(len(r.Body)))
	})
	c.OnError(func(r *colly.Response, err error) {
		if r != nil && r.StatusCode > 0 {
			pages.Add(1) // a response, e.g. a 404
			bytes.Add(int64(len(r.Body)))
			return
		}
		errs.Add(1)
		if *verbose {
			fmt.Fprintf(os.Stderr, "error %s: %v\n", r.Request.URL, err)
		}
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		if ctx.Err() != nil {
			return
		}
		u := e.Request.AbsoluteURL(e.Attr("href"))
		if u == "" {
			return
		}
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "http" || !strings.HasSuffix(strings.ToLower(pu.Hostname()), ".test") {
			return
		}
		// Colly compares URLs as written; normalise what differs only in
		// spelling (host case, fragment) so that one page is one visit.
		pu.Host = strings.ToLower(pu.Host)
		pu.Fragment, pu.RawFragment = "", ""
		if err := e.Request.Visit(pu.String()); errors.Is(err, colly.ErrRobotsTxtBlocked) {
			robots.Add(1)
		}
	})

	start := time.Now()
	done := make(chan struct{})
	if *progress > 0 {
		go func() {
			t := time.NewTicker(*progress)
			defer t.Stop()
			var prev int64
			last := start
			for {
				select {
				case <-done:
					return
				case now := <-t.C:
					p := pages.Load()
					fmt.Fprintf(os.Stderr, "pages %d (%.0f/s)\n", p, float64(p-prev)/now.Sub(last).Seconds())
					prev, last = p, now
				}
			}
		}()
	}
	for _, s := range seeds {
		if err := c.Visit(s); errors.Is(err, colly.ErrRobotsTxtBlocked) {
			robots.Add(1)
		}
	}
	waited := make(chan struct{})
	go func() { c.Wait(); close(waited) }()
	stopped := false
	select {
	case <-waited:
	case <-ctx.Done():
		// Colly has no cancellation: report what was fetched so far
		// and exit; the process exit ends the pending requests.
		stopped = true
	}
	close(done)
	res := result{
		Pages: pages.Load(), Errors: errs.Load(), Robots: robots.Load(), Bytes: bytes.Load(),
		ElapsedS: time.Since(start).Seconds(), Stopped: stopped, Hosts: len(names),
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// readHosts reads a hosts file into a map of lower-case name to address.
func readHosts(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read hosts: %w", err)
	}
	defer f.Close()
	m := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fs := strings.Fields(line)
		if len(fs) < 2 || net.ParseIP(fs[0]) == nil {
			continue
		}
		for _, n := range fs[1:] {
			m[strings.ToLower(n)] = fs[0]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read hosts: %w", err)
	}
	return m, nil
}

// readSeeds reads one URL a line, skipping blanks and # comments.
func readSeeds(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read seeds: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// rootsConfig returns the TLS configuration trusting the system's roots
// and those of caFile ("": the system's only).
func rootsConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca file %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{RootCAs: pool}, nil
}
