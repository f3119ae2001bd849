package testweb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config describes a synthetic web. The zero value of every field selects
// its default.
type Config struct {
	Hosts        int                  // number of normal hosts (default 40)
	HostsPerIP   int                  // default 4
	PagesPerHost int                  // default 30
	LinksPerPage int                  // default 8 (mix of relative, root-relative and absolute, same-host and cross-host)
	PageBytes    int                  // approximate HTML size (default 2048; benchmarks use 20 KiB)
	Seed         int64                // everything derives from it
	FirstIP      netip.Addr           // first address (default 127.31.0.1); addresses are allocated upward from it
	Port         int                  // 0 = an ephemeral port per address (URLs then carry the port); >0 fixed port
	Hostile      bool                 // add the hostile hosts (see HostileCases)
	Logf         func(string, ...any) // optional: receives serving errors

	// MaxHits caps the request log (default 10,000,000); hits beyond it are
	// counted by DroppedHits and not kept.
	MaxHits int
	// CrawlDelay, when positive, adds a "Crawl-delay" line (in seconds) to
	// the robots.txt of about one normal host in ten. Default none.
	CrawlDelay time.Duration
	// BombBytes is the decoded size of the gzip, deflate and brotli bombs
	// of the hostile web (default 256 MiB).
	BombBytes int64
	// HugeBytes is the size of the hostile web's huge body (default 64 MiB).
	HugeBytes int64
	// Latency, when positive, is how long a normal host waits before it
	// answers a request other than for robots.txt (a slow server: a
	// client's requests spend that long in flight). Default none.
	Latency time.Duration
	// ChangeDay, when positive, makes the normal web's HTML pages change
	// over time, each at its own rate, on a clock on which a day lasts
	// ChangeDay, with validators (ETag, Last-Modified; some hosts send
	// neither or wrong ones) and 304 answers (change.go). Default: a
	// static web.
	ChangeDay time.Duration
}

// Hit is one request answered by the synthetic web.
type Hit struct {
	Host      string     // Host header (name only)
	IP        netip.Addr // address the connection arrived on
	Path      string     // path+query as requested
	Status    int        // status sent (0 if none was sent)
	UserAgent string
	Proto     string // the request's protocol, "HTTP/1.1" or "HTTP/2.0" ("" for the raw hostile servers)
	// Start is when the handler began, the request headers read: never
	// before the client sent them. End is when the last write of the
	// response to the kernel began (or the response was abandoned): never
	// after the client could have had its last byte (see stamp.go).
	Start, End time.Time
	// Cut says the connection had seen the client close before the
	// response ended: End may then be a little later than the client's
	// giving up.
	Cut bool
	// Version is the version of a page of the changing web (ChangeDay)
	// at Start: the one served with a 200, the live one with a 304; 0
	// for every other resource.
	Version uint32 `json:",omitempty"`
	// Conditional says the request had If-None-Match or
	// If-Modified-Since.
	Conditional bool `json:",omitempty"`
}

// Web is a running synthetic web. Its methods are safe for concurrent use.
type Web struct {
	cfg     Config
	product string // robots.txt product token used for Expected

	sites   []*site          // normal sites, in index order
	hsites  []*site          // hostile sites served here
	byName  map[string]*site // every served site by lower-case name
	addrs   []netip.Addr
	hosts   []hostsLine
	seeds   []string
	hseeds  []string
	cases   []Case
	expect  []string
	disallw []string

	pool              [][]byte // shared filler paragraphs
	hostileDisallowed []string
	nofollowed        []string
	nearDups          [][]string
	bombs             bombs

	lns     []net.Listener
	servers []*http.Server
	raws    []*rawServer
	wg      sync.WaitGroup

	mu    sync.Mutex // guards lns, servers, raws
	log   hitLog
	place placement // hosts moved to another address (move.go)

	born time.Time // when the web started: version 0 of every changing page

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
}

// hostsLine is one line of the hosts file.
type hostsLine struct {
	ip   string
	name string
}

func (c *Config) setDefaults() {
	if c.Hosts <= 0 {
		c.Hosts = 40
	}
	if c.HostsPerIP <= 0 {
		c.HostsPerIP = 4
	}
	if c.PagesPerHost <= 0 {
		c.PagesPerHost = 30
	}
	if c.PagesPerHost < 4 {
		c.PagesPerHost = 4
	}
	if c.LinksPerPage <= 0 {
		c.LinksPerPage = 8
	}
	if c.PageBytes <= 0 {
		c.PageBytes = 2048
	}
	if !c.FirstIP.IsValid() {
		c.FirstIP = netip.AddrFrom4([4]byte{127, 31, 0, 1})
	}
	if c.MaxHits <= 0 {
		c.MaxHits = 10_000_000
	}
	if c.BombBytes <= 0 {
		c.BombBytes = 256 << 20
	}
	if c.HugeBytes <= 0 {
		c.HugeBytes = 64 << 20
	}
}

// Start builds the web described by cfg, binds every address and serves
// until ctx is done or Close is called. Addresses must be loopback
// addresses (127.0.0.0/8 or ::1).
func Start(ctx context.Context, cfg Config) (*Web, error) {
	cfg.setDefaults()
	if !cfg.FirstIP.IsLoopback() {
		return nil, fmt.Errorf("testweb: start: first address %v is not a loopback address", cfg.FirstIP)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("testweb: start: invalid port %d", cfg.Port)
	}
	w := &Web{
		cfg:     cfg,
		product: "petrel",
		byName:  make(map[string]*site),
		done:    make(chan struct{}),
		born:    time.Now(),
	}
	w.log.max = cfg.MaxHits
	if err := w.build(); err != nil {
		w.Close()
		return nil, err
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

// nextAddr returns the address after a.
func nextAddr(a netip.Addr) (netip.Addr, error) {
	n := a.Next()
	if !n.IsValid() || !n.IsLoopback() {
		return netip.Addr{}, fmt.Errorf("testweb: address range exhausted after %v", a)
	}
	return n, nil
}

// listen binds a TCP listener on ip and the configured port.
func (w *Web) listen(ip netip.Addr) (net.Listener, int, error) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, uint16(w.cfg.Port)).String())
	if err != nil {
		return nil, 0, fmt.Errorf("testweb: listen on %v: %w", ip, err)
	}
	w.mu.Lock()
	w.lns = append(w.lns, ln)
	w.mu.Unlock()
	return ln, ln.Addr().(*net.TCPAddr).Port, nil
}

// origin returns the normalised scheme+authority of name on port.
func origin(name string, port int) string {
	if port == 80 {
		return "http://" + name
	}
	return "http://" + name + ":" + strconv.Itoa(port)
}

// build binds the listeners, generates the content and starts serving.
func (w *Web) build() error {
	ip := w.cfg.FirstIP
	var pending []func()
	// Normal sites: HostsPerIP names per address.
	for i := 0; i < w.cfg.Hosts; i += w.cfg.HostsPerIP {
		if i > 0 {
			var err error
			if ip, err = nextAddr(ip); err != nil {
				return err
			}
		}
		ln, port, err := w.listen(ip)
		if err != nil {
			return err
		}
		var group []*site
		for j := i; j < i+w.cfg.HostsPerIP && j < w.cfg.Hosts; j++ {
			s := &site{name: hostName(j), ip: ip, port: port, index: j}
			s.origin = origin(s.name, port)
			w.sites = append(w.sites, s)
			w.byName[s.name] = s
			w.hosts = append(w.hosts, hostsLine{ip.String(), s.name})
			group = append(group, s)
		}
		w.addrs = append(w.addrs, ip)
		srvIP := ip
		pending = append(pending, func() { w.serveHTTP(ln, srvIP, group) })
	}
	w.generateNormal()
	if w.cfg.Hostile {
		var err error
		if ip, err = nextAddr(ip); err != nil {
			return err
		}
		hp, err := w.buildHostile(ip)
		if err != nil {
			return err // Close releases the listeners bound so far
		}
		pending = append(pending, hp...)
	}
	for _, f := range pending {
		f()
	}
	w.computeExpected()
	return nil
}

// hostName is the name of normal host i.
func hostName(i int) string { return fmt.Sprintf("h%03d.petrel.test", i) }

// serveHTTP serves the sites of one address with net/http.
func (w *Web) serveHTTP(ln net.Listener, ip netip.Addr, group []*site) {
	byName := make(map[string]*site, len(group))
	for _, s := range group {
		byName[s.name] = s
	}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		name := hostOnly(r.Host)
		s := w.siteAt(ip, name, byName)
		status, version := 0, uint32(0)
		if s == nil {
			status = http.StatusMisdirectedRequest
			writeBody(rw, status, "text/plain; charset=utf-8", []byte("no such host here\n"))
		} else {
			if w.cfg.Latency > 0 && r.URL.Path != "/robots.txt" {
				time.Sleep(w.cfg.Latency)
			}
			status, version = s.serve(w, rw, r, start)
		}
		h := Hit{Host: name, IP: ip, Path: r.URL.RequestURI(), Status: status,
			UserAgent: r.UserAgent(), Proto: r.Proto, Start: start, Version: version,
			Conditional: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != ""}
		endHTTP(&h, rw, r)
		w.record(h)
	})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
		ConnContext:       stampContext,
	}
	w.mu.Lock()
	w.servers = append(w.servers, srv)
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if err := srv.Serve(stampListener{ln}); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.logf("testweb: serve %v: %v", ip, err)
		}
	}()
}

// hostOnly returns the lower-case name of a Host header, without port.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// writeBody writes a complete response with Content-Length.
func writeBody(rw http.ResponseWriter, status int, ctype string, body []byte) {
	hd := rw.Header()
	if ctype != "" {
		hd.Set("Content-Type", ctype)
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	rw.Write(body)
}

// record appends h to the hit log, or counts it as dropped.
func (w *Web) record(h Hit) { w.log.record(h) }

func (w *Web) logf(format string, args ...any) {
	if w.cfg.Logf != nil {
		w.cfg.Logf(format, args...)
	}
}

// HostsFile returns the hosts file of the web: one "IP name" line per host,
// including the hostile web's private-address name when Hostile is set.
func (w *Web) HostsFile() []byte {
	var b strings.Builder
	for _, l := range w.hosts {
		b.WriteString(l.ip)
		b.WriteByte(' ')
		b.WriteString(l.name)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Seeds returns the seed URLs: home pages of a subset of the normal hosts
// from which every normal page is reachable, followed, when Hostile is set,
// by the entry URL of every hostile case.
func (w *Web) Seeds() []string {
	out := append([]string(nil), w.seeds...)
	return append(out, w.hseeds...)
}

// NormalSeeds returns the seeds of the normal web only.
func (w *Web) NormalSeeds() []string { return append([]string(nil), w.seeds...) }

// HostileSeeds returns the entry URLs of the hostile cases (nil unless
// Hostile is set).
func (w *Web) HostileSeeds() []string { return append([]string(nil), w.hseeds...) }

// WriteFiles writes the hosts file and the seeds file (one URL a line) into
// dir, creating it if needed, and returns their paths.
func (w *Web) WriteFiles(dir string) (hostsPath, seedsPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	hostsPath = filepath.Join(dir, "hosts")
	seedsPath = filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(hostsPath, w.HostsFile(), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	var b strings.Builder
	b.WriteString("# seeds of the petrel synthetic web\n")
	for _, s := range w.Seeds() {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(seedsPath, []byte(b.String()), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	return hostsPath, seedsPath, nil
}

// Expected returns, sorted, every URL of the normal web that a correct
// crawler with an unlimited budget, scope "all", obeying robots.txt for the
// product token "petrel", fetches from the normal seeds: pages, 404 targets,
// redirect sources and their targets, non-HTML resources. It never contains
// robots.txt itself nor a disallowed URL. URLs are normalised (lower-case
// host, default port omitted, no fragment).
func (w *Web) Expected() []string { return append([]string(nil), w.expect...) }

// Disallowed returns, sorted, the URLs linked from reachable pages but
// disallowed by robots.txt for "petrel"; a correct crawler never requests
// them. With Hostile set it includes the hostile robots.txt cases' forbidden
// links.
func (w *Web) Disallowed() []string { return append([]string(nil), w.disallw...) }

// Hits returns a copy of the request log in End order, robots.txt
// requests included.
func (w *Web) Hits() []Hit { return w.log.all() }

// DroppedHits returns how many hits were not logged because the log was full.
func (w *Web) DroppedHits() int64 { return w.log.droppedHits() }

// ResetHits empties the request log and the dropped count.
func (w *Web) ResetHits() { w.log.reset() }

// Addrs returns every address the web listens on.
func (w *Web) Addrs() []netip.Addr { return append([]netip.Addr(nil), w.addrs...) }

// Hosts returns the names of the normal hosts, in order.
func (w *Web) Hosts() []string {
	out := make([]string, len(w.sites))
	for i, s := range w.sites {
		out[i] = s.name
	}
	return out
}

// Origin returns the normalised scheme+authority ("http://name[:port]") of
// a served host name, and whether it is served.
func (w *Web) Origin(name string) (string, bool) {
	s, ok := w.byName[strings.ToLower(name)]
	if !ok {
		return "", false
	}
	return s.origin, true
}

// Shutdown stops the web as Close does, but first, until ctx ends, stops
// accepting and waits for the requests being answered on its net/http
// servers to finish (http.Server.Shutdown): a request is logged before its
// connection goes idle, so the log then holds every request of those
// servers whose client has had its answer.
func (w *Web) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	servers := append([]*http.Server(nil), w.servers...)
	w.mu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("testweb: shutdown: %w", err))
			break
		}
	}
	return errors.Join(append(errs, w.Close())...)
}

// Close stops every server, drops held connections and waits for the
// serving goroutines. It is safe to call more than once.
func (w *Web) Close() error {
	w.closeOnce.Do(func() {
		close(w.done)
		w.mu.Lock()
		servers := append([]*http.Server(nil), w.servers...)
		raws := append([]*rawServer(nil), w.raws...)
		lns := append([]net.Listener(nil), w.lns...)
		w.mu.Unlock()
		var errs []error
		for _, s := range servers {
			if err := s.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for _, ln := range lns {
			ln.Close() // already closed if served; releases unserved ones
		}
		for _, r := range raws {
			r.close()
		}
		w.wg.Wait()
		w.closeErr = errors.Join(errs...)
		if w.closeErr != nil {
			w.closeErr = fmt.Errorf("testweb: close: %w", w.closeErr)
		}
	})
	return w.closeErr
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
