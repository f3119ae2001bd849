package testweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// GenServeOptions are the serving settings of a generated web.
type GenServeOptions struct {
	// LogHits keeps a request log ([GenWeb.Hits]), capped at MaxHits
	// (default 1,000,000); off, only the counts are kept.
	LogHits bool
	MaxHits int
	// DNS, when set ("IP:port", a loopback address; port 0 picks one), is
	// where the web's DNS server listens (see [DNSServer]).
	DNS  string
	Logf func(string, ...any)
}

// GenCounts are the counters of a generated web.
type GenCounts struct {
	Requests    int64 // every request answered
	Pages       int64 // pages served (200)
	Robots      int64 // robots.txt requests
	NotFound    int64 // 404s other than robots.txt
	Misdirected int64 // 421: a name not of this web or not on this address
	Bytes       int64 // body bytes sent
	DNSQueries  int64 // DNS questions answered
}

// GenWeb serves a [Gen] on its loopback addresses: one listener per
// address, all on one port, answered by one net/http server that renders
// each page on request. Its methods are safe for concurrent use.
type GenWeb struct {
	gen  *Gen
	opts GenServeOptions
	lns  []net.Listener
	srv  *http.Server
	dns  *DNSServer
	wg   sync.WaitGroup
	pool sync.Pool

	requests, pages, robots, notFound, misdirected, bytes atomic.Int64

	log hitLog

	closeOnce sync.Once
	done      chan struct{}
}

// StartGen binds the addresses of the web cfg describes (and its DNS
// server when opts.DNS is set) and serves until ctx is done or Close is
// called.
func StartGen(ctx context.Context, cfg GenConfig, opts GenServeOptions) (*GenWeb, error) {
	g, err := NewGen(cfg)
	if err != nil {
		return nil, err
	}
	if opts.MaxHits <= 0 {
		opts.MaxHits = 1_000_000
	}
	w := &GenWeb{opts: opts, done: make(chan struct{})}
	w.log.max = opts.MaxHits
	w.pool.New = func() any { return new(bytes.Buffer) }
	port, err := w.bind(g)
	if err != nil {
		return nil, err
	}
	w.gen = g.withPort(port)
	if opts.DNS != "" {
		if w.dns, err = ListenDNS(opts.DNS, w.gen); err != nil {
			w.Close()
			return nil, err
		}
	}
	w.srv = &http.Server{
		Handler:           w,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnContext:       stampContext,
	}
	for _, ln := range w.lns {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := w.srv.Serve(stampListener{ln}); err != nil && !errors.Is(err, http.ErrServerClosed) && w.opts.Logf != nil {
				w.opts.Logf("testweb: serve %v: %v", ln.Addr(), err)
			}
		}()
	}
	go func() {
		select {
		case <-ctx.Done():
			w.Close()
		case <-w.done:
		}
	}()
	return w, nil
}

// bind opens one listener per address, all on one port: cfg.Port, or an
// ephemeral port of the first address tried on the others (a few times
// over if one of them has it taken).
func (w *GenWeb) bind(g *Gen) (int, error) {
	const attempts = 8
	var last error
	for range attempts {
		port := g.cfg.Port
		lns := make([]net.Listener, 0, g.cfg.Addrs)
		var err error
		for i := range g.cfg.Addrs {
			var ln net.Listener
			ln, err = net.Listen("tcp", netip.AddrPortFrom(g.Addr(i), uint16(port)).String())
			if err != nil {
				err = fmt.Errorf("testweb: generated web: listen on %v: %w", g.Addr(i), err)
				break
			}
			if port == 0 {
				port = ln.Addr().(*net.TCPAddr).Port
			}
			lns = append(lns, ln)
		}
		if err == nil {
			w.lns = lns
			return port, nil
		}
		for _, ln := range lns {
			ln.Close()
		}
		last = err
		if g.cfg.Port != 0 || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return 0, last
}

// Gen returns the model of the served web (with its port).
func (w *GenWeb) Gen() *Gen { return w.gen }

// DNSAddr returns the address of the DNS server, or "" when there is none.
func (w *GenWeb) DNSAddr() string {
	if w.dns == nil {
		return ""
	}
	return w.dns.Addr()
}

// ServeHTTP answers one request: robots.txt, a page, 404 or 421.
func (w *GenWeb) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := hostOnly(r.Host)
	status := w.serve(rw, r, name)
	w.requests.Add(1)
	if w.opts.LogHits {
		h := Hit{Host: name, IP: localAddr(r), Path: r.RequestURI, Status: status, UserAgent: r.UserAgent(), Start: start}
		endHTTP(&h, rw, r)
		w.log.record(h)
	}
}

func (w *GenWeb) serve(rw http.ResponseWriter, r *http.Request, name string) int {
	g := w.gen
	h, err := g.Host(name)
	if err == nil {
		if g.addrIndexOf(localAddr(r)) != g.AddrIndex(h) {
			err = ErrNotGenerated
		}
	}
	if err != nil {
		w.misdirected.Add(1)
		writeBody(rw, http.StatusMisdirectedRequest, "text/plain; charset=utf-8", []byte("no such host here\n"))
		return http.StatusMisdirectedRequest
	}
	uri := r.RequestURI
	if uri == "/robots.txt" {
		w.robots.Add(1)
		if body := g.Robots(h); body != nil {
			w.bytes.Add(int64(len(body)))
			writeBody(rw, http.StatusOK, "text/plain; charset=utf-8", body)
			return http.StatusOK
		}
		writeBody(rw, http.StatusNotFound, "text/html; charset=utf-8", notFoundBody)
		return http.StatusNotFound
	}
	p, err := g.Page(h, uri)
	if err != nil {
		w.notFound.Add(1)
		writeBody(rw, http.StatusNotFound, "text/html; charset=utf-8", notFoundBody)
		return http.StatusNotFound
	}
	b := w.pool.Get().(*bytes.Buffer)
	b.Reset()
	g.Render(b, h, p)
	w.pages.Add(1)
	w.bytes.Add(int64(b.Len()))
	writeBody(rw, http.StatusOK, "text/html; charset=utf-8", b.Bytes())
	w.pool.Put(b)
	return http.StatusOK
}

// localAddr returns the address a request arrived on.
func localAddr(r *http.Request) netip.Addr {
	if ta, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// Hits returns a copy of the request log (empty unless LogHits is set).
func (w *GenWeb) Hits() []Hit { return w.log.all() }

// Counts returns the counters so far.
func (w *GenWeb) Counts() GenCounts {
	c := GenCounts{
		Requests: w.requests.Load(), Pages: w.pages.Load(), Robots: w.robots.Load(),
		NotFound: w.notFound.Load(), Misdirected: w.misdirected.Load(), Bytes: w.bytes.Load(),
	}
	if w.dns != nil {
		c.DNSQueries = w.dns.Queries()
	}
	return c
}

// WriteFiles writes into dir the seeds file (the home pages of seeds hosts,
// one URL a line) and, when the web has a DNS server, a file "dns" holding
// its address, and returns the paths.
func (w *GenWeb) WriteFiles(dir string, seeds int) (seedsPath, dnsPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	seedsPath = filepath.Join(dir, "seeds.txt")
	var b strings.Builder
	b.WriteString("# seeds of the petrel generated web\n")
	for _, s := range w.gen.Seeds(seeds) {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(seedsPath, []byte(b.String()), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	if w.dns != nil {
		dnsPath = filepath.Join(dir, "dns")
		if err := os.WriteFile(dnsPath, []byte(w.dns.Addr()+"\n"), 0o644); err != nil {
			return "", "", fmt.Errorf("testweb: write files: %w", err)
		}
	}
	return seedsPath, dnsPath, nil
}

// String describes the web in one line.
func (w *GenWeb) String() string {
	c := w.gen.cfg
	return "generated web of " + strconv.Itoa(c.Hosts) + " hosts (about " + strconv.Itoa(c.PagesPerHost) +
		" pages each) on " + strconv.Itoa(c.Addrs) + " addresses from " + c.FirstIP.String() + " port " + strconv.Itoa(w.gen.port)
}

// Close stops serving and waits for the serving goroutines; safe to call
// more than once.
func (w *GenWeb) Close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.done)
		if w.srv != nil {
			err = w.srv.Close()
		}
		for _, ln := range w.lns {
			ln.Close()
		}
		if w.dns != nil {
			w.dns.Close()
		}
		w.wg.Wait()
	})
	return err
}
