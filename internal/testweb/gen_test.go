package testweb

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/petrel-crawler/petrel/internal/fetch"
)

func testGen(t *testing.T, cfg GenConfig) *Gen {
	t.Helper()
	g, err := NewGen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGenDeterministic: names, sizes, addresses, paths, links, robots.txt
// and page bytes are a function of (seed, host, page); another seed gives
// another web; names and paths map back to their host and page.
func TestGenDeterministic(t *testing.T) {
	a := testGen(t, GenConfig{Seed: 7, Port: 80})
	b := testGen(t, GenConfig{Seed: 7, Port: 80})
	c := testGen(t, GenConfig{Seed: 8, Port: 80})
	r := stream{42}
	differ := 0
	for range 300 {
		h := r.intn(a.cfg.Hosts)
		p := r.intn(a.Pages(h))
		if a.Name(h) != b.Name(h) || a.Pages(h) != b.Pages(h) || a.AddrIndex(h) != b.AddrIndex(h) ||
			a.Path(h, p) != b.Path(h, p) || !bytes.Equal(a.Robots(h), b.Robots(h)) {
			t.Fatalf("host %d page %d differs between two webs of one seed", h, p)
		}
		var pa, pb bytes.Buffer
		a.Render(&pa, h, p)
		b.Render(&pb, h, p)
		if !bytes.Equal(pa.Bytes(), pb.Bytes()) {
			t.Fatalf("page %s rendered twice differs", a.URL(h, p))
		}
		if a.URL(h, p) != c.URL(h, p) {
			differ++
		}
		if got, err := a.Host(a.Name(h)); err != nil || got != h {
			t.Fatalf("Host(%q) = %d, %v; want %d", a.Name(h), got, err, h)
		}
		if got, err := a.Page(h, a.Path(h, p)); err != nil || got != p {
			t.Fatalf("Page(%d, %q) = %d, %v; want %d", h, a.Path(h, p), got, err, p)
		}
		for _, l := range a.Links(h, p) {
			u, err := url.Parse(l)
			if err != nil || u.Scheme != "http" || u.Port() != "" {
				t.Fatalf("link %q of %s: %v", l, a.URL(h, p), err)
			}
			th, err := a.Host(u.Hostname())
			if err != nil {
				t.Fatalf("link %q names no host of the web", l)
			}
			_, perr := a.Page(th, u.RequestURI())
			bad := strings.HasPrefix(u.Path, "/private/") || strings.HasPrefix(u.Path, "/gone/")
			if (perr == nil) == bad {
				t.Fatalf("link %q: page error %v", l, perr)
			}
		}
	}
	if differ < 290 {
		t.Errorf("only %d of 300 URLs differ between seeds 7 and 8", differ)
	}
	for _, bad := range []string{"h1.test", "www.x-zz.test", a.Name(3) + "x", strings.Replace(a.Name(3), "-3.", "-4.", 1), "a-zzzzzzzz.test"} {
		if _, err := a.Host(bad); !errors.Is(err, ErrNotGenerated) {
			t.Errorf("Host(%q) = %v, want ErrNotGenerated", bad, err)
		}
	}
	p := a.Path(5, 9)
	for _, bad := range []string{p + "x", strings.Replace(p, ".html", "-1.html", 1), "/a/b-0.html", "/robots.txt", "/private/1.html"} {
		if _, err := a.Page(5, bad); err == nil {
			t.Errorf("Page(5, %q) found a page", bad)
		}
	}
}

// TestGenURLLengths states the URL length distribution: mean ≥ 60 bytes.
func TestGenURLLengths(t *testing.T) {
	g := testGen(t, GenConfig{Seed: 1, Port: 80})
	d := g.URLLengths(20000, 1)
	t.Logf("URL length over %d URLs: mean %.1f, p10 %d, p50 %d, p90 %d, p99 %d, max %d",
		d.N, d.Mean, d.P10, d.P50, d.P90, d.P99, d.Max)
	if d.Mean < 60 || d.Mean > 120 {
		t.Errorf("mean URL length %.1f, want 60..120", d.Mean)
	}
	if d.P10 < 30 || d.P90 > 200 {
		t.Errorf("URL lengths p10 %d p90 %d look wrong", d.P10, d.P90)
	}
}

// TestGenShape: pages of 2–4 KiB with about 40 links, most to other pages
// than the page's own section, many cross-host; skewed host sizes and
// addresses.
func TestGenShape(t *testing.T) {
	g := testGen(t, GenConfig{Seed: 3, Port: 80})
	r := stream{9}
	var bytesSum, links, cross, n int
	distinct := map[string]bool{}
	for range 2000 {
		h := r.intn(g.cfg.Hosts)
		p := r.intn(g.Pages(h))
		var b bytes.Buffer
		g.Render(&b, h, p)
		bytesSum += b.Len()
		n++
		for _, l := range g.Links(h, p) {
			links++
			distinct[l] = true
			if !strings.Contains(l, g.Name(h)+"/") {
				cross++
			}
		}
	}
	mean := bytesSum / n
	t.Logf("%d pages: mean %d bytes, %.1f links each, %.2f cross-host, %.2f distinct", n, mean,
		float64(links)/float64(n), float64(cross)/float64(links), float64(len(distinct))/float64(links))
	if mean < 2048 || mean > 4096 {
		t.Errorf("mean page %d bytes, want 2–4 KiB", mean)
	}
	perPage := float64(links) / float64(n)
	if perPage < 38 || perPage > 42 {
		t.Errorf("%.1f links a page, want about 40", perPage)
	}
	if f := float64(cross) / float64(links); f < 0.25 || f > 0.5 {
		t.Errorf("cross-host links %.2f of all, want 0.25..0.5", f)
	}
	if f := float64(len(distinct)) / float64(links); f < 0.7 {
		t.Errorf("only %.2f of links distinct over 2000 pages", f)
	}
	sizes := make([]int, 20000)
	perAddr := make([]int, g.cfg.Addrs)
	sum := 0
	for i := range sizes {
		sizes[i] = g.Pages(i * 50)
		sum += sizes[i]
		perAddr[g.AddrIndex(i*50)]++
	}
	slices.Sort(sizes)
	meanSize := float64(sum) / float64(len(sizes))
	if meanSize < 700 || meanSize > 1400 {
		t.Errorf("mean host size %.0f pages, want about 1000", meanSize)
	}
	if sizes[len(sizes)-1] < 20*sizes[len(sizes)/2] {
		t.Errorf("largest host %d pages, median %d: not skewed", sizes[len(sizes)-1], sizes[len(sizes)/2])
	}
	sorted := slices.Clone(perAddr)
	slices.Sort(sorted)
	if perAddr[0] < 30*max(1, sorted[len(sorted)/2]) {
		t.Errorf("first address %d hosts, median %d: not skewed", perAddr[0], sorted[len(sorted)/2])
	}
}

// startTestGen serves a small generated web with a DNS server.
func startTestGen(t *testing.T, log bool) *GenWeb {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := StartGen(ctx, GenConfig{Hosts: 2000, PagesPerHost: 50, Addrs: 8, Seed: 5,
		FirstIP: netip.MustParseAddr("127.129.0.1")},
		GenServeOptions{LogHits: log, DNS: "127.129.0.200:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// get fetches u, connecting to the address the web's model gives its host.
func get(t *testing.T, g *Gen, u string, via netip.Addr) (int, []byte) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if !via.IsValid() {
		if via, err = g.Lookup(pu.Hostname()); err != nil {
			t.Fatal(err)
		}
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(via.String(), port))
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestGenServe: pages, robots.txt, 404 and 421 over real sockets, the
// request log when on, the counts always.
func TestGenServe(t *testing.T) {
	for _, logOn := range []bool{true, false} {
		w := startTestGen(t, logOn)
		g := w.Gen()
		h := 17
		st, body := get(t, g, g.URL(h, 3), netip.Addr{})
		var want bytes.Buffer
		g.Render(&want, h, 3)
		if st != 200 || !bytes.Equal(body, want.Bytes()) {
			t.Fatalf("GET %s: %d, %d bytes; want 200 and the rendered page", g.URL(h, 3), st, len(body))
		}
		st, body = get(t, g, g.Origin(h)+"/robots.txt", netip.Addr{})
		if rb := g.Robots(h); (rb == nil && st != 404) || (rb != nil && (st != 200 || !bytes.Equal(body, rb))) {
			t.Errorf("robots.txt of %d: %d %q", h, st, body)
		}
		if st, _ := get(t, g, g.Origin(h)+"/gone/1.html", netip.Addr{}); st != 404 {
			t.Errorf("missing page: %d, want 404", st)
		}
		other := g.Addr((g.AddrIndex(h) + 1) % g.cfg.Addrs)
		if st, _ := get(t, g, g.URL(h, 1), other); st != http.StatusMisdirectedRequest {
			t.Errorf("host asked on another address: %d, want 421", st)
		}
		c := w.Counts()
		if c.Requests != 4 || c.Pages != 1 || c.Robots != 1 || c.NotFound != 1 || c.Misdirected != 1 || c.Bytes == 0 {
			t.Errorf("counts %+v", c)
		}
		// A hit is recorded after its response is flushed: wait (bounded,
		// 5s: a loaded machine) for the last one when the log is on; when
		// it is off, wait 200ms for one that should not come.
		wait := 200 * time.Millisecond
		if logOn {
			wait = 5 * time.Second
		}
		for deadline := time.Now().Add(wait); (!logOn || len(w.Hits()) < 4) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if hits := w.Hits(); logOn != (len(hits) == 4) {
			t.Errorf("log on %v: %d hits", logOn, len(hits))
		} else if logOn {
			// The log is in End order, which need not be request order.
			i := slices.IndexFunc(hits, func(x Hit) bool { return x.Path == g.Path(h, 3) })
			if i < 0 || hits[i].Host != g.Name(h) || hits[i].IP != g.Addr(g.AddrIndex(h)) {
				t.Errorf("page hit %d of %+v", i, hits)
			}
		}
		w.Close()
	}
}

// TestGenDNS resolves the web's names through Petrel's resolver pointed at
// the web's DNS server; unknown names get NXDOMAIN, malformed queries a
// FORMERR or nothing, and the server keeps answering.
func TestGenDNS(t *testing.T) {
	w := startTestGen(t, false)
	g := w.Gen()
	r := fetch.NewResolver(fetch.ResolverOptions{System: true, Server: w.DNSAddr(), Timeout: 2 * time.Second})
	ctx := context.Background()
	for _, h := range []int{0, 1, 999, 1999} {
		addrs, err := r.Lookup(ctx, strings.ToUpper(g.Name(h)))
		if err != nil {
			t.Fatalf("lookup %s: %v", g.Name(h), err)
		}
		if len(addrs) != 1 || addrs[0] != g.Addr(g.AddrIndex(h)) {
			t.Errorf("lookup %s = %v, want %v", g.Name(h), addrs, g.Addr(g.AddrIndex(h)))
		}
	}
	for _, name := range []string{"absent.test", strings.Replace(g.Name(5), "-5.", "-6.", 1)} {
		if _, err := r.Lookup(ctx, name); !errors.Is(err, fetch.ErrNoSuchHost) {
			t.Errorf("lookup %s: %v, want no such host", name, err)
		}
	}
	// Special-use names never go to a server that is not on loopback.
	far := fetch.NewResolver(fetch.ResolverOptions{System: true, Server: "192.0.2.1:53", Timeout: time.Second})
	if _, err := far.Lookup(ctx, g.Name(1)); !errors.Is(err, fetch.ErrSpecialUseName) {
		t.Errorf("lookup through a non-loopback server: %v, want ErrSpecialUseName", err)
	}

	conn, err := net.Dial("udp", w.DNSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ask := func(msg []byte) (dnsmessage.Header, bool) {
		t.Helper()
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 1500)
		n, err := conn.Read(buf)
		if err != nil {
			return dnsmessage.Header{}, false
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			t.Fatalf("unparseable answer: %v", err)
		}
		return h, true
	}
	if _, ok := ask([]byte{1, 2, 3}); ok {
		t.Error("a 3-byte message was answered")
	}
	two := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 77})
	two.StartQuestions()
	n1, _ := dnsmessage.NewName(g.Name(1) + ".")
	n2, _ := dnsmessage.NewName(g.Name(2) + ".")
	two.Question(dnsmessage.Question{Name: n1, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	two.Question(dnsmessage.Question{Name: n2, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	msg, _ := two.Finish()
	if h, ok := ask(msg); !ok || h.ID != 77 || h.RCode != dnsmessage.RCodeFormatError {
		t.Errorf("two questions: answered %v, %+v; want FORMERR", ok, h)
	}
	if addrs, err := r.Lookup(ctx, g.Name(1234)); err != nil || addrs[0] != g.Addr(g.AddrIndex(1234)) {
		t.Errorf("after malformed queries: %v %v", addrs, err)
	}
	if w.Counts().DNSQueries == 0 {
		t.Error("no DNS query counted")
	}
}
