package testweb

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

func realGen(t *testing.T, hosts int) *Gen {
	return testGen(t, GenConfig{Shape: ShapeReal, Hosts: hosts, PagesPerHost: 20, Seed: 5, Port: 80, TLSPort: 443})
}

// TestRealSizes: page sizes follow the lognormal law (median tens of KB,
// mean above 100 KB, a tail past 1 MiB), rendered pages have the size
// drawn, and a larger page has more links.
func TestRealSizes(t *testing.T) {
	g := realGen(t, 1000)
	var sizes []int
	sum := 0
	for h := range 1000 {
		for p := range 20 {
			s := g.pageBytes(h, p)
			sizes = append(sizes, s)
			sum += s
		}
	}
	slices.Sort(sizes)
	med, mean := sizes[len(sizes)/2], sum/len(sizes)
	p99, p999 := sizes[len(sizes)*99/100], sizes[len(sizes)*999/1000]
	t.Logf("median %d, mean %d, p99 %d, p99.9 %d, max %d", med, mean, p99, p999, sizes[len(sizes)-1])
	if med < 25<<10 || med > 36<<10 {
		t.Errorf("median page %d bytes, want about 30 KiB", med)
	}
	if mean < 100_000 || mean > 150_000 {
		t.Errorf("mean page %d bytes, want above 100 KB (about 108 KiB)", mean)
	}
	if p99 < 1<<20 || sizes[len(sizes)-1] > RealMaxBytes {
		t.Errorf("p99 %d, max %d: want a tail past 1 MiB, cut at %d", p99, sizes[len(sizes)-1], RealMaxBytes)
	}
	var b bytes.Buffer
	small, large := -1, -1
	for p := range 20 {
		b.Reset()
		g.Render(&b, 3, p)
		want := g.pageBytes(3, p)
		if b.Len() < want-600 || b.Len() > want+64<<10 {
			t.Errorf("page %d: %d bytes, drawn %d", p, b.Len(), want)
		}
		for _, tag := range []string{"<style", "<script>", "data-track=", "aria-label=", "<meta name=\"viewport\""} {
			if !bytes.Contains(b.Bytes(), []byte(tag)) {
				t.Errorf("page %d lacks %q", p, tag)
			}
		}
		if n := strings.Count(b.String(), "<a href="); n != len(g.links(nil, 3, p)) {
			t.Errorf("page %d: %d anchors, %d links", p, n, len(g.links(nil, 3, p)))
		}
		if small < 0 || want < g.pageBytes(3, small) {
			small = p
		}
		if large < 0 || want > g.pageBytes(3, large) {
			large = p
		}
	}
	if ls, ll := len(g.Links(3, small)), len(g.Links(3, large)); ll <= ls {
		t.Errorf("links of the largest page %d ≤ of the smallest %d", ll, ls)
	}
}

// TestRealTraits: the shares of HTTPS, TLS 1.2, HTTP/2, slow, failing and
// down hosts, Crawl-delay and robots.txt on every host.
func TestRealTraits(t *testing.T) {
	const n = 20000
	g := realGen(t, n)
	var https, tls12, h2, slow, failing, down, delay int
	var lat []time.Duration
	for h := range n {
		tr := g.traits(h)
		https += b2i(tr.https)
		tls12 += b2i(tr.tls12)
		h2 += b2i(tr.h2)
		slow += b2i(tr.slow)
		failing += b2i(tr.failing)
		down += b2i(tr.down)
		delay += b2i(tr.crawlDelay > 0)
		if !tr.slow {
			lat = append(lat, tr.base)
		}
		if r := g.Robots(h); !bytes.Contains(r, []byte("Disallow: /private/")) {
			t.Fatalf("host %d robots.txt %q", h, r)
		}
	}
	slices.Sort(lat)
	share := func(k int) float64 { return float64(k) / n }
	for _, c := range []struct {
		name     string
		got      float64
		from, to float64
	}{
		{"https", share(https), 0.88, 0.92}, {"tls1.2", share(tls12), 0.16, 0.20}, {"h2", share(h2), 0.34, 0.38},
		{"slow", share(slow), 0.015, 0.025}, {"failing", share(failing), 0.015, 0.025},
		{"down", share(down), 0.004, 0.01}, {"crawl-delay", share(delay), 0.025, 0.035},
	} {
		if c.got < c.from || c.got > c.to {
			t.Errorf("%s share %.3f, want in [%.3f, %.3f]", c.name, c.got, c.from, c.to)
		}
	}
	if m := lat[len(lat)/2]; m < 25*time.Millisecond || m > 35*time.Millisecond {
		t.Errorf("median latency %v, want about 30ms", m)
	}
	// Politeness does not bound a crawl: hosts are spread evenly.
	per := map[int]int{}
	for h := range n {
		per[g.AddrIndex(h)]++
	}
	for a, k := range per {
		if k != 4 {
			t.Fatalf("address %d holds %d hosts, want 4", a, k)
		}
	}
}

// realClient returns an HTTP client of the web w that trusts its CA, dials
// its names at their addresses and keeps TLS sessions; h2 allows HTTP/2.
func realClient(t *testing.T, w *GenWeb, h2 bool) *http.Client {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.CAPEM()) {
		t.Fatal("CAPEM holds no certificate")
	}
	var d net.Dialer
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(64)},
		ForceAttemptHTTP2:  h2,
		DisableCompression: true,
		DisableKeepAlives:  true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			a, err := w.Gen().Lookup(host)
			if err != nil {
				return nil, err
			}
			return d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		},
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// findHost returns the first host whose traits satisfy ok.
func findHost(t *testing.T, g *Gen, ok func(hostTraits, string) bool) int {
	for h := range g.cfg.Hosts {
		if ok(g.traits(h), g.Name(h)) {
			return h
		}
	}
	t.Fatal("no host of that kind")
	return 0
}

// TestRealServe serves a real-shaped web and checks, over real sockets:
// TLS versions per host, ALPN h2, session resumption, the http → https
// and bare → www redirects, gzip and brotli, 503 and dropped hosts.
func TestRealServe(t *testing.T) {
	w, err := StartGen(t.Context(), GenConfig{Shape: ShapeReal, Hosts: 400, PagesPerHost: 10, Seed: 5,
		FirstIP: netip.MustParseAddr("127.93.0.1")}, GenServeOptions{LogHits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g := w.Gen()
	fast := func(tr hostTraits) bool { return !tr.slow && !tr.down && !tr.failing }
	get := func(c *http.Client, url, ae string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	h1 := realClient(t, w, false)
	h12 := findHost(t, g, func(tr hostTraits, _ string) bool { return fast(tr) && tr.tls12 })
	h13 := findHost(t, g, func(tr hostTraits, _ string) bool { return fast(tr) && tr.https && !tr.tls12 && !tr.h2 })
	hh2 := findHost(t, g, func(tr hostTraits, _ string) bool { return fast(tr) && tr.h2 })
	for _, c := range []struct {
		h       int
		version uint16
	}{{h12, tls.VersionTLS12}, {h13, tls.VersionTLS13}} {
		for i := range 2 {
			resp := get(h1, g.URL(c.h, 0), "")
			if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version != c.version || resp.ProtoMajor != 1 {
				t.Fatalf("%s: status %d, TLS %+v, proto %s", g.URL(c.h, 0), resp.StatusCode, resp.TLS, resp.Proto)
			}
			if resume := resp.TLS.DidResume; resume != (i == 1) {
				t.Errorf("%s: connection %d resumed %v (tickets)", g.URL(c.h, 0), i, resume)
			}
		}
	}
	if resp := get(realClient(t, w, true), g.URL(hh2, 0), ""); resp.ProtoMajor != 2 || resp.TLS.NegotiatedProtocol != "h2" {
		t.Errorf("h2 host answered over %s", resp.Proto)
	}
	if resp := get(realClient(t, w, true), g.URL(h13, 0), ""); resp.ProtoMajor != 1 {
		t.Errorf("a host without h2 answered over %s", resp.Proto)
	}
	// http → https, bare → www, both in one hop.
	var plain strings.Builder
	g.origin(&plain, h13, false, true)
	if resp := get(h1, plain.String()+"/robots.txt", ""); resp.StatusCode != 301 || resp.Header.Get("Location") != g.Origin(h13)+"/robots.txt" {
		t.Errorf("http://: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	www := findHost(t, g, func(tr hostTraits, name string) bool { return fast(tr) && tr.https && bareName(name) != "" })
	var bare strings.Builder
	g.origin(&bare, www, true, true)
	if resp := get(h1, bare.String()+"/", ""); resp.StatusCode != 301 || resp.Header.Get("Location") != g.URL(www, 0) {
		t.Errorf("bare name: %d to %q, want %s", resp.StatusCode, resp.Header.Get("Location"), g.URL(www, 0))
	}
	// Compression.
	var want bytes.Buffer
	g.Render(&want, h13, 0)
	brh := findHost(t, g, func(tr hostTraits, _ string) bool { return fast(tr) && tr.https && !tr.h2 && tr.brotli })
	var wantBr bytes.Buffer
	g.Render(&wantBr, brh, 0)
	for _, c := range []struct {
		h      int
		ae     string
		coding string
		want   []byte
	}{{h13, "gzip, deflate", "gzip", want.Bytes()}, {h13, "", "", want.Bytes()}, {brh, "gzip, br", "br", wantBr.Bytes()}, {brh, "gzip, br;q=0", "gzip", wantBr.Bytes()}} {
		resp := get(h1, g.URL(c.h, 0), c.ae)
		var r io.Reader = resp.Body
		switch resp.Header.Get("Content-Encoding") {
		case "gzip":
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(resp.Body)
		}
		got, err := io.ReadAll(r)
		if err != nil || resp.Header.Get("Content-Encoding") != c.coding || !bytes.Equal(got, c.want) {
			t.Errorf("Accept-Encoding %q: coding %q, want %q; body equal %v (%v)", c.ae, resp.Header.Get("Content-Encoding"), c.coding, bytes.Equal(got, c.want), err)
		}
	}
	// Failing and down hosts.
	fail := findHost(t, g, func(tr hostTraits, _ string) bool { return tr.failing })
	if g.Pages(fail) > 1 {
		if resp := get(h1, g.URL(fail, 1), ""); resp.StatusCode != 503 {
			t.Errorf("failing host's page 1: %d, want 503", resp.StatusCode)
		}
	}
	down := findHost(t, g, func(tr hostTraits, _ string) bool { return tr.down && !tr.slow })
	if _, err := h1.Get(g.URL(down, 0)); err == nil {
		t.Error("a down host answered")
	}
	for _, hit := range w.Hits() {
		if hit.Host == g.Name(down) && (hit.Status != 0 || hit.End.Before(hit.Start)) {
			t.Errorf("down host's hit %+v: want status 0 (nothing sent)", hit)
		}
	}
	h2hits := 0
	for _, hit := range w.Hits() {
		if hit.Proto == "HTTP/2.0" {
			h2hits++
			if hit.Host != g.Name(hh2) {
				t.Errorf("hit %+v logged as HTTP/2, want only the h2 host's", hit)
			}
		} else if hit.Proto != "HTTP/1.1" {
			t.Errorf("hit %+v: protocol %q not logged", hit, hit.Proto)
		}
	}
	if h2hits != 1 {
		t.Errorf("%d hits logged as HTTP/2, want 1", h2hits)
	}
	if c := w.Counts(); c.Redirects != 2 || c.Gzip != 2 || c.Brotli != 1 || c.HTTP2 != 1 || c.Dropped != 1 {
		t.Errorf("counts %+v", c)
	}
}
