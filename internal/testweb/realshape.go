package testweb

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ShapeReal is the [GenConfig.Shape] of a generated web shaped like the
// web a crawler meets (see [Gen] for the plain shape). On top of the plain
// shape's names, paths and link graph:
//
//   - HTTPS on 90 % of hosts (an HTTPS host's http:// URLs answer 301 to
//     https://), served with certificates of a certificate authority the
//     web makes at start ([GenWeb.CAPEM]); TLS 1.3, but TLS 1.2 at most on
//     a fifth of the HTTPS hosts; session tickets issued as Go's server
//     issues them (TLS 1.2 and 1.3); 40 % of the HTTPS hosts offer HTTP/2
//     by ALPN ("h2", "http/1.1"), the others HTTP/1.1 only.
//   - Page sizes (the uncompressed HTML) drawn from a lognormal law with
//     median [RealMedianBytes] and σ [RealSigma] (mean ≈ 3.6 × the median,
//     1 % of pages past 1.2 MiB), cut to [RealMinBytes, RealMaxBytes]. A page
//     of s bytes has 16 + s/1 KiB links (at most 500): 80 % to its own host.
//     The markup is a page's: a head with meta tags, an inline style sheet
//     and inline scripts (JSON data, a loader), navigation and cards whose
//     elements carry long class lists, data-* and aria-* attributes,
//     inline SVG icons, tables and forms; filler holds no URL.
//   - gzip (level 1, as nginx's default) when the request accepts it;
//     brotli (level 1) instead on the 40 % of hosts that offer it, when
//     the request accepts br.
//   - Latency per host: a base drawn from a lognormal law (median 30 ms,
//     σ 0.7: 1 % above 150 ms), each answer waiting base × [0.5, 1.5);
//     2 % of hosts are slow (1 to 3 s a request); 2 % are failing (a
//     third of their pages answer 503); 1 % are down (the connection is
//     closed without an answer to every request).
//   - Redirects: every host named "www.…" also answers to its name without
//     "www." (301 to the www name, in one hop with the scheme); one
//     link to such a host in 64 uses the bare name, one link to another
//     HTTPS host in 200 is written http://, so that about one request in
//     seven is a redirect (a page has about 120 links, a fifth of them to
//     other hosts); seeds are http://.
//   - robots.txt on every host: /private/ disallowed for every agent (and
//     /search on one host in twenty), a group closing the site to another
//     bot, and Crawl-delay 1 or 2 on 3 % of hosts.
//   - Hosts spread evenly over the addresses (default: four per address),
//     so that per-address politeness does not bound a crawl.
//
// Everything but the certificates derives from the seed (Go's crypto does
// not take a caller's randomness: the keys differ from one start to the
// next, the web does not).
const ShapeReal = "real"

// The page size law of the real shape.
const (
	RealMedianBytes = 30 << 10
	RealSigma       = 1.6
	RealMinBytes    = 1 << 10
	RealMaxBytes    = 6 << 20
)

// hostTraits are the real-shape properties of a host.
type hostTraits struct {
	https      bool
	tls12      bool // HTTPS limited to TLS 1.2
	h2         bool // offers HTTP/2 by ALPN
	brotli     bool // answers br when asked
	base       time.Duration
	slow       bool
	failing    bool // a third of its pages answer 503
	down       bool // every connection closed without an answer
	crawlDelay int  // seconds, in robots.txt (0: none)
}

// traits returns the real-shape properties of host h (the zero value, a
// plain fast HTTP host, in the plain shape).
func (g *Gen) traits(h int) hostTraits {
	if !g.real {
		return hostTraits{}
	}
	r := g.stream(tagTraits, h, 0)
	var t hostTraits
	t.https = r.intn(100) < 90
	if t.https {
		t.tls12 = r.intn(5) == 0
		t.h2 = r.intn(5) < 2
	}
	t.brotli = r.intn(5) < 2
	t.base = time.Duration(30 * float64(time.Millisecond) * math.Exp(0.7*normal(&r)))
	switch x := r.intn(100); {
	case x < 2:
		t.slow = true
		t.base = time.Second + time.Duration(r.intn(2000))*time.Millisecond
	case x < 4:
		t.failing = true
	case x < 5 && !t.h2:
		t.down = true
	case x < 8:
		t.crawlDelay = 1 + r.intn(2)
	}
	return t
}

// OffersHTTP2 reports whether the host named name (or, for a name
// without "www." that redirects to its www host, that host) offers
// HTTP/2 by ALPN (real shape only).
func (g *Gen) OffersHTTP2(name string) bool {
	h, _, err := g.resolve(name)
	return err == nil && g.traits(h).h2
}

// normal returns a standard normal draw (Box–Muller).
func normal(r *stream) float64 {
	u1 := 1 - r.unit() // (0, 1]
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*r.unit())
}

// pageBytes returns the size aimed at for page p of host h.
func (g *Gen) pageBytes(h, p int) int {
	if !g.real {
		return g.cfg.PageBytes
	}
	r := g.stream(tagSize, h, 1+p)
	s := RealMedianBytes * math.Exp(RealSigma*normal(&r))
	return int(min(max(s, RealMinBytes), RealMaxBytes))
}

// linkCount returns the number of links of a page of size bytes.
func (g *Gen) linkCount(size int) int {
	if !g.real {
		return g.cfg.LinksPerPage
	}
	return min(16+size>>10, 500)
}

// latency returns how long the answer to page p of host h waits (p = -1:
// robots.txt and redirects).
func (g *Gen) latency(t hostTraits, h, p int) time.Duration {
	if t.base == 0 {
		return 0
	}
	r := g.stream(tagLatency, h, p)
	return time.Duration(float64(t.base) * (0.5 + r.unit()))
}

// pageFails reports whether page p of a failing host answers 503.
func pageFails(t hostTraits, p int) bool { return t.failing && p%3 == 1 }

// bareName returns the name of a www host without "www.", or "".
func bareName(name string) string {
	b, ok := strings.CutPrefix(name, "www.")
	if !ok {
		return ""
	}
	return b
}

// resolve returns the host of a name of the web and whether the name is
// the bare alias of a www host (real shape only), or ErrNotGenerated.
func (g *Gen) resolve(name string) (int, bool, error) {
	h, err := g.Host(name)
	if err == nil || !g.real {
		return h, false, err
	}
	if h, err = g.Host("www." + name); err != nil {
		return 0, false, ErrNotGenerated
	}
	return h, true, nil
}

// origin writes the origin of host h to b: "scheme://name[:port]"; bare
// writes the name without "www.", plain the http:// origin of an HTTPS
// host.
func (g *Gen) origin(b textWriter, h int, bare, plain bool) {
	name := g.Name(h)
	if bare {
		if n := bareName(name); n != "" {
			name = n
		}
	}
	https := g.traits(h).https && !plain
	port, std := g.port, 80
	if https {
		b.WriteString("https://")
		port, std = g.tlsPort, 443
	} else {
		b.WriteString("http://")
	}
	b.WriteString(name)
	if port != std {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(port))
	}
}

// realRobots returns the robots.txt of host h in the real shape.
func (g *Gen) realRobots(h int) []byte {
	r := g.stream(tagRobots, h, 0)
	var b strings.Builder
	b.WriteString("# robots.txt\nUser-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n")
	if r.intn(20) == 0 {
		b.WriteString("Disallow: /search\n")
	}
	if d := g.traits(h).crawlDelay; d > 0 {
		b.WriteString("Crawl-delay: " + strconv.Itoa(d) + "\n")
	}
	return []byte(b.String())
}

// Reach returns the canonical URLs of the pages a correct crawler fetches
// with success (200) from Seeds(seeds), following every link and redirect
// and obeying robots.txt: pages of down hosts, failing pages (503, not
// followed further) and missing pages excluded. It walks the whole
// reachable graph: meant for small webs; it gives up past limit pages
// (nil, false).
func (g *Gen) Reach(seeds, limit int) ([]string, bool) {
	type page struct{ h, p int }
	seen := map[page]bool{}
	var queue []page
	add := func(pg page) {
		if !seen[pg] {
			seen[pg] = true
			queue = append(queue, pg)
		}
	}
	step := g.cfg.Hosts / max(1, min(seeds, g.cfg.Hosts))
	for i := range max(1, min(seeds, g.cfg.Hosts)) {
		add(page{i * step, 0})
	}
	var out []string
	var buf []genLink
	for len(queue) > 0 {
		pg := queue[0]
		queue = queue[1:]
		t := g.traits(pg.h)
		if t.down || pageFails(t, pg.p) {
			continue
		}
		if len(out) == limit {
			return nil, false
		}
		out = append(out, g.URL(pg.h, pg.p))
		buf = g.links(buf[:0], pg.h, pg.p)
		for _, l := range buf {
			if !l.private && !l.missing {
				add(page{l.host, l.page})
			}
		}
	}
	return out, true
}
