package testweb

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// GenConfig describes a generated web (see [Gen]). The zero value of every
// field selects its default.
type GenConfig struct {
	Hosts        int   // number of hosts (default 1,000,000)
	PagesPerHost int   // mean pages per host (default 1,000); sizes follow a Pareto law
	LinksPerPage int   // default 40
	PageBytes    int   // body size aimed at, filler included (default 3,072)
	Addrs        int   // loopback addresses the hosts share (default 4,096), skewed
	Seed         int64 // everything derives from it
	// FirstIP is the first address (default 127.128.0.1); the web uses
	// Addrs consecutive addresses from it.
	FirstIP netip.Addr
	// Port is the one port every address serves on (0: an ephemeral port
	// chosen on the first address and bound on every other). URLs carry it
	// unless it is 80.
	Port int
	// Shape is "" (the plain shape described at [Gen]) or [ShapeReal].
	// In the real shape Addrs defaults to a quarter of Hosts, and
	// LinksPerPage and PageBytes are replaced by laws (see ShapeReal).
	Shape string
	// TLSPort is the HTTPS port of every address in the real shape (0: an
	// ephemeral port, as Port). URLs carry it unless it is 443.
	TLSPort int
}

// Gen is the model of a generated web: every host name, address, URL,
// robots.txt and page is a pure function of (seed, host, path), computed on
// request in constant memory, so a web of 10⁹ URLs costs no more RAM than
// one of 10³. A Gen is immutable and safe for concurrent use.
//
// Shape (all draws from splitmix64 streams keyed by seed, host and page):
//
//   - Host h is named "[sub.]word[word]-<h in base 36>.test"; its size is
//     a Pareto draw (α = 1.5, minimum PagesPerHost/3, capped at
//     1,000 × PagesPerHost), so the mean is about PagesPerHost and a few
//     hosts are hundreds of times larger than most.
//   - Host h lives on address floor(Addrs · u³) for a uniform u: the first
//     addresses hold tens of thousands of hosts each (shared hosting), the
//     median one about a hundred at 10⁶ hosts over 4,096 addresses.
//   - Page 0 of a host is "/"; page p ≥ 1 is "/dir[/dir[/dir]]/w-w[-w…]-<p in
//     base 36>.html", one in five with a query "?id=N&lang=xx" — see
//     [Gen.URLLengths] for the length distribution (mean ≈ 80 bytes).
//   - A page links to the home page and three section pages of its host,
//     then LinksPerPage−4 links: 60 % to a page of its own host, 40 % to a
//     page of another host (half uniform over all hosts, half skewed to the
//     first hosts); the page within a host is floor(size · u²), skewed to
//     low numbers. One page in eight also links to a /private/ page that
//     robots.txt disallows, one in sixteen to a missing page (404).
//   - robots.txt: one host in ten has none (404); the others disallow
//     /private/ for every agent, and one in twenty of them also /search.
type Gen struct {
	cfg     GenConfig
	words   []string
	first   uint32 // FirstIP as a number
	port    int
	tlsPort int
	real    bool     // Shape is ShapeReal
	blocks  [][]byte // real shape: filler markup (see realpage.go)
}

// Errors of the generated web.
var (
	ErrNotGenerated = errors.New("not a name or page of the generated web")
)

func (c *GenConfig) setDefaults() {
	if c.Hosts <= 0 {
		c.Hosts = 1_000_000
	}
	if c.PagesPerHost <= 0 {
		c.PagesPerHost = 1000
	}
	if c.PagesPerHost < 4 {
		c.PagesPerHost = 4
	}
	if c.LinksPerPage <= 0 {
		c.LinksPerPage = 40
	}
	if c.LinksPerPage < 5 {
		c.LinksPerPage = 5
	}
	if c.PageBytes <= 0 {
		c.PageBytes = 3072
	}
	if c.Addrs <= 0 && c.Shape == ShapeReal {
		c.Addrs = max(1, c.Hosts/4)
	}
	if c.Addrs <= 0 {
		c.Addrs = 4096
	}
	if c.Addrs > c.Hosts {
		c.Addrs = c.Hosts
	}
	if !c.FirstIP.IsValid() {
		c.FirstIP = netip.AddrFrom4([4]byte{127, 128, 0, 1})
	}
}

// NewGen returns the model of the web cfg describes. The addresses must be
// IPv4 loopback addresses.
func NewGen(cfg GenConfig) (*Gen, error) {
	cfg.setDefaults()
	if !cfg.FirstIP.Is4() || !cfg.FirstIP.IsLoopback() {
		return nil, fmt.Errorf("testweb: generated web: first address %v is not an IPv4 loopback address", cfg.FirstIP)
	}
	b := cfg.FirstIP.As4()
	first := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if last := uint64(first) + uint64(cfg.Addrs) - 1; last > 0x7fffffff-1 {
		return nil, fmt.Errorf("testweb: generated web: %d addresses from %v leave 127.0.0.0/8", cfg.Addrs, cfg.FirstIP)
	}
	if cfg.Port < 0 || cfg.Port > 65535 || cfg.TLSPort < 0 || cfg.TLSPort > 65535 {
		return nil, fmt.Errorf("testweb: generated web: invalid port %d or %d", cfg.Port, cfg.TLSPort)
	}
	if cfg.Shape != "" && cfg.Shape != ShapeReal {
		return nil, fmt.Errorf("testweb: generated web: unknown shape %q (want %q or none)", cfg.Shape, ShapeReal)
	}
	g := &Gen{cfg: cfg, first: first, port: cfg.Port, tlsPort: cfg.TLSPort, real: cfg.Shape == ShapeReal}
	g.words = makeWords(uint64(cfg.Seed), 2048)
	if g.real {
		g.blocks = g.makeBlocks()
	}
	return g, nil
}

// Config returns the configuration, defaults filled in.
func (g *Gen) Config() GenConfig { return g.cfg }

// withPorts returns a copy of g serving on port and tlsPort (fixed once
// the listeners are bound).
func (g *Gen) withPorts(port, tlsPort int) *Gen {
	c := *g
	c.port, c.tlsPort = port, tlsPort
	c.cfg.Port, c.cfg.TLSPort = port, tlsPort
	return &c
}

// textWriter is what pages and paths are written to (a strings.Builder or
// a bytes.Buffer).
type textWriter interface {
	WriteString(s string) (int, error)
	WriteByte(c byte) error
}

// Stream tags: every property draws from its own stream.
const (
	tagName uint64 = iota + 1
	tagSize
	tagAddr
	tagRobots
	tagPath
	tagPage
	tagWords
	tagTraits
	tagLatency
)

// mix returns a well-spread 64-bit value of (a, b, c, d).
func mix(a, b, c, d uint64) uint64 {
	x := splitmix(a ^ 0x6a09e667f3bcc908)
	x = splitmix(x ^ b)
	x = splitmix(x ^ c)
	return splitmix(x ^ d)
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// stream is a splitmix64 generator.
type stream struct{ s uint64 }

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); n > 0.
func (r *stream) intn(n int) int { return int((r.next() >> 1) % uint64(n)) }

// unit returns a value in [0, 1).
func (r *stream) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

func (g *Gen) stream(tag uint64, h, p int) stream {
	return stream{mix(uint64(g.cfg.Seed), tag, uint64(h), uint64(p))}
}

// makeWords builds the vocabulary: n distinct lower-case words of 3 to 10
// letters made of syllables.
func makeWords(seed uint64, n int) []string {
	r := stream{mix(seed, tagWords, 0, 0)}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	var b strings.Builder
	for len(out) < n {
		b.Reset()
		k := 1 + r.intn(3)
		for range k {
			b.WriteString(syllables[r.intn(len(syllables))])
		}
		w := b.String()
		if len(w) < 3 || len(w) > 10 || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

func (g *Gen) word(r *stream) string { return g.words[r.intn(len(g.words))] }

var subdomains = []string{"", "", "www.", "www.", "www.", "blog.", "shop.", "news.", "m.", "docs."}

// Name returns the host name of host h (0 ≤ h < Hosts).
func (g *Gen) Name(h int) string {
	r := g.stream(tagName, h, 0)
	var b strings.Builder
	b.Grow(32)
	b.WriteString(subdomains[r.intn(len(subdomains))])
	b.WriteString(g.word(&r))
	if r.intn(2) == 0 {
		b.WriteString(g.word(&r))
	}
	b.WriteByte('-')
	b.WriteString(strconv.FormatUint(uint64(h), 36))
	b.WriteString(".test")
	return b.String()
}

// Host returns the host index of name (lower-case, no trailing dot), or
// ErrNotGenerated.
func (g *Gen) Host(name string) (int, error) {
	base, ok := strings.CutSuffix(name, ".test")
	i := strings.LastIndexByte(base, '-')
	if !ok || i < 0 {
		return 0, ErrNotGenerated
	}
	h, err := strconv.ParseUint(base[i+1:], 36, 32)
	if err != nil || h >= uint64(g.cfg.Hosts) || g.Name(int(h)) != name {
		return 0, ErrNotGenerated
	}
	return int(h), nil
}

// Pages returns the number of pages of host h.
func (g *Gen) Pages(h int) int {
	r := g.stream(tagSize, h, 0)
	xm := float64(g.cfg.PagesPerHost) / 3
	u := 1 - r.unit() // (0, 1]
	n := xm * math.Pow(u, -1/1.5)
	limit := 1000 * float64(g.cfg.PagesPerHost)
	if n > limit {
		n = limit
	}
	if n < 4 {
		n = 4
	}
	return int(n)
}

// AddrIndex returns the index of the address of host h.
func (g *Gen) AddrIndex(h int) int {
	if g.real {
		return h % g.cfg.Addrs
	}
	r := g.stream(tagAddr, h, 0)
	u := r.unit()
	return min(int(float64(g.cfg.Addrs)*u*u*u), g.cfg.Addrs-1)
}

// Addr returns address i of the web.
func (g *Gen) Addr(i int) netip.Addr {
	v := g.first + uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// addrIndexOf returns the index of a, or -1.
func (g *Gen) addrIndexOf(a netip.Addr) int {
	if !a.Is4() {
		a = a.Unmap()
	}
	if !a.Is4() {
		return -1
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if v < g.first || v-g.first >= uint32(g.cfg.Addrs) {
		return -1
	}
	return int(v - g.first)
}

// Lookup returns the address of a host name of the web (case and a trailing
// dot ignored; in the real shape a www host's bare name too), or
// ErrNotGenerated.
func (g *Gen) Lookup(name string) (netip.Addr, error) {
	h, _, err := g.resolve(strings.TrimSuffix(strings.ToLower(name), "."))
	if err != nil {
		return netip.Addr{}, err
	}
	return g.Addr(g.AddrIndex(h)), nil
}

// Origin returns "scheme://name[:port]" of host h: http, or in the real
// shape https for an HTTPS host.
func (g *Gen) Origin(h int) string {
	var b strings.Builder
	g.origin(&b, h, false, false)
	return b.String()
}

// Path returns the path (and query) of page p of host h; page 0 is "/".
func (g *Gen) Path(h, p int) string {
	if p == 0 {
		return "/"
	}
	var b strings.Builder
	b.Grow(64)
	g.appendPath(&b, h, p)
	return b.String()
}

// appendPath writes the path of page p ≥ 1 of host h.
func (g *Gen) appendPath(b textWriter, h, p int) {
	r := g.stream(tagPath, h, p)
	// Directories come from a per-host stream keyed by p's section, so
	// pages of one section share them, as on a real site.
	dr := g.stream(tagPath, h, -1-int(r.next()%16))
	for range 1 + r.intn(3) {
		b.WriteByte('/')
		b.WriteString(g.word(&dr))
	}
	b.WriteByte('/')
	for range 2 + r.intn(4) {
		b.WriteString(g.word(&r))
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(uint64(p), 36))
	b.WriteString(".html")
	if r.intn(5) == 0 {
		b.WriteString("?id=")
		b.WriteString(strconv.Itoa(r.intn(100000)))
		b.WriteString("&lang=")
		b.WriteString([]string{"en", "de", "fr", "es", "it", "nl"}[r.intn(6)])
	}
}

// Page returns the page index of a request URI on host h, or
// ErrNotGenerated when no page has it.
func (g *Gen) Page(h int, uri string) (int, error) {
	if uri == "/" {
		return 0, nil
	}
	path := uri
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	stem, ok := strings.CutSuffix(last, ".html")
	i := strings.LastIndexByte(stem, '-')
	if !ok || i < 0 {
		return 0, ErrNotGenerated
	}
	p, err := strconv.ParseUint(stem[i+1:], 36, 32)
	if err != nil || p == 0 || p >= uint64(g.Pages(h)) || g.Path(h, int(p)) != uri {
		return 0, ErrNotGenerated
	}
	return int(p), nil
}

// URL returns the absolute URL of page p of host h.
func (g *Gen) URL(h, p int) string { return g.Origin(h) + g.Path(h, p) }

// Robots returns the robots.txt of host h, or nil when it has none (404;
// every host has one in the real shape).
func (g *Gen) Robots(h int) []byte {
	if g.real {
		return g.realRobots(h)
	}
	r := g.stream(tagRobots, h, 0)
	switch x := r.intn(20); {
	case x < 2:
		return nil
	case x == 2:
		return []byte("User-agent: *\nDisallow: /private/\nDisallow: /search\n")
	}
	return []byte("User-agent: *\nDisallow: /private/\n")
}

// Seeds returns the home pages of n hosts spread over the web (in the real
// shape as a user writes them: http://, a www host by its bare name every
// other time).
func (g *Gen) Seeds(n int) []string {
	n = max(1, min(n, g.cfg.Hosts))
	out := make([]string, n)
	step := g.cfg.Hosts / n
	for i := range out {
		if !g.real {
			out[i] = g.URL(i*step, 0)
			continue
		}
		var b strings.Builder
		g.origin(&b, i*step, i%2 == 0, true)
		b.WriteByte('/')
		out[i] = b.String()
	}
	return out
}

// URLLengthDist is a distribution of URL lengths, in bytes.
type URLLengthDist struct {
	N                       int
	Mean                    float64
	P10, P50, P90, P99, Max int
}

// URLLengths measures the lengths of about n URLs as a crawler meets them:
// every link of pages drawn uniformly (a uniform host, a uniform page of
// it) from the stream rseed.
func (g *Gen) URLLengths(n int, rseed uint64) URLLengthDist {
	r := stream{rseed}
	lens := make([]int, 0, n+64)
	sum := 0
	for len(lens) < n {
		h := r.intn(g.cfg.Hosts)
		for _, l := range g.Links(h, r.intn(g.Pages(h))) {
			lens = append(lens, len(l))
			sum += len(l)
		}
	}
	slices.Sort(lens)
	q := func(f float64) int { return lens[min(len(lens)-1, int(f*float64(len(lens))))] }
	return URLLengthDist{N: len(lens), Mean: float64(sum) / float64(len(lens)),
		P10: q(0.10), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: lens[len(lens)-1]}
}
