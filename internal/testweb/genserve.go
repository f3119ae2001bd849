package testweb

import (
	"bytes"
	"context"
	"crypto/tls"
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
	Bytes       int64 // body bytes sent (before compression)
	DNSQueries  int64 // DNS questions answered
	// Real shape only:
	Redirects int64 // 301s (http → https, bare name → www)
	Failures  int64 // 503s of failing hosts
	Dropped   int64 // requests to down hosts, closed without an answer
	Gzip      int64 // pages sent gzip-compressed
	Brotli    int64 // pages sent brotli-compressed
	TLS       int64 // requests over TLS
	HTTP2     int64 // requests over HTTP/2
}

// GenWeb serves a [Gen] on its loopback addresses: one listener per
// address, all on one port, answered by one net/http server that renders
// each page on request. Its methods are safe for concurrent use.
type GenWeb struct {
	gen  *Gen
	opts GenServeOptions
	lns  []net.Listener
	tls  []net.Listener // real shape: the HTTPS listeners
	ca   *webCA         // real shape
	srv  *http.Server
	dns  *DNSServer
	wg   sync.WaitGroup
	pool sync.Pool

	requests, pages, robots, notFound, misdirected, bytes         atomic.Int64
	redirects, failures, dropped, gzips, brotlis, tlsReqs, h2Reqs atomic.Int64
	enc                                                           encoders

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
	var port, tlsPort int
	if w.lns, port, err = bindAll(g, g.cfg.Port); err != nil {
		return nil, err
	}
	if g.real {
		if w.tls, tlsPort, err = bindAll(g, g.cfg.TLSPort); err != nil {
			w.Close()
			return nil, err
		}
	}
	w.gen = g.withPorts(port, tlsPort)
	if g.real {
		if w.ca, err = newWebCA(w.gen); err != nil {
			w.Close()
			return nil, err
		}
	}
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
	serve := func(ln net.Listener) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && w.opts.Logf != nil {
				w.opts.Logf("testweb: serve %v: %v", ln.Addr(), err)
			}
		}()
	}
	for _, ln := range w.lns {
		serve(stampListener{ln})
	}
	if w.ca != nil {
		cfg := w.ca.serverConfig()
		for _, ln := range w.tls {
			serve(tls.NewListener(stampListener{ln}, cfg))
		}
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

// bindAll opens one listener per address, all on one port: want, or an
// ephemeral port of the first address tried on the others (a few times
// over if one of them has it taken).
func bindAll(g *Gen, want int) ([]net.Listener, int, error) {
	const attempts = 8
	var last error
	for range attempts {
		port := want
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
			return lns, port, nil
		}
		for _, ln := range lns {
			ln.Close()
		}
		last = err
		if want != 0 || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, 0, last
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
	rw = stampStream(rw, r)
	var status int
	if w.gen.real {
		status = w.serveReal(rw, r, name)
	} else {
		status = w.serve(rw, r, name)
	}
	w.requests.Add(1)
	if w.opts.LogHits {
		h := Hit{Host: name, IP: localAddr(r), Path: r.RequestURI, Status: status, UserAgent: r.UserAgent(), Proto: r.Proto, Start: start}
		if status != 0 { // 0: dropped, nothing to flush
			endHTTP(&h, rw, r)
		}
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
		Redirects: w.redirects.Load(), Failures: w.failures.Load(), Dropped: w.dropped.Load(),
		Gzip: w.gzips.Load(), Brotli: w.brotlis.Load(), TLS: w.tlsReqs.Load(), HTTP2: w.h2Reqs.Load(),
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
	tls := ""
	if w.gen.real {
		tls = " (HTTPS port " + strconv.Itoa(w.gen.tlsPort) + "), shape " + c.Shape
	}
	return "generated web of " + strconv.Itoa(c.Hosts) + " hosts (about " + strconv.Itoa(c.PagesPerHost) +
		" pages each) on " + strconv.Itoa(c.Addrs) + " addresses from " + c.FirstIP.String() + " port " + strconv.Itoa(w.gen.port) + tls
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
		for _, ln := range w.tls {
			ln.Close()
		}
		if w.dns != nil {
			w.dns.Close()
		}
		w.wg.Wait()
	})
	return err
}

// CAPEM returns the PEM certificate of the web's certificate authority
// (real shape; nil otherwise).
func (w *GenWeb) CAPEM() []byte {
	if w.ca == nil {
		return nil
	}
	return w.ca.pem
}

// maxHostsFile bounds the hosts a hosts file of the generated web lists.
const maxHostsFile = 100_000

// WriteRealFiles writes into dir, for a real-shaped web, "ca.pem" (the
// certificate authority, for a crawler's --ca-file) and "hosts" (an
// "IP name" line per name: every host and the bare name of each www host,
// for crawlers that take a hosts file; at most maxHostsFile hosts), and
// returns their paths.
func (w *GenWeb) WriteRealFiles(dir string) (caPath, hostsPath string, err error) {
	g := w.gen
	if w.ca == nil {
		return "", "", errors.New("testweb: not a real-shaped web")
	}
	if g.cfg.Hosts > maxHostsFile {
		return "", "", fmt.Errorf("testweb: a hosts file lists at most %d hosts, not %d", maxHostsFile, g.cfg.Hosts)
	}
	caPath, hostsPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "hosts")
	if err := os.WriteFile(caPath, w.ca.pem, 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	var b strings.Builder
	for h := range g.cfg.Hosts {
		a, name := g.Addr(g.AddrIndex(h)).String(), g.Name(h)
		b.WriteString(a + " " + name + "\n")
		if bare := bareName(name); bare != "" {
			b.WriteString(a + " " + bare + "\n")
		}
	}
	if err := os.WriteFile(hostsPath, []byte(b.String()), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	return caPath, hostsPath, nil
}
