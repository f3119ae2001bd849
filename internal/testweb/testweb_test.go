package testweb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// hostsMap parses a hosts file.
func hostsMap(t testing.TB, b []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("bad hosts line %q", line)
		}
		m[f[1]] = f[0]
	}
	return m
}

// client returns a bounded HTTP client that dials the hosts-file address of
// every name and refuses anything outside 127/8.
func client(t testing.TB, w *Web, timeout time.Duration) *http.Client {
	hosts := hostsMap(t, w.HostsFile())
	d := &net.Dialer{Timeout: time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip, ok := hosts[strings.ToLower(host)]
			if !ok {
				return nil, fmt.Errorf("no such host %q", host)
			}
			if a := netip.MustParseAddr(ip); !a.IsLoopback() {
				return nil, fmt.Errorf("refusing %v", a)
			}
			return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
		},
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    4,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// hitsAtLeast returns the hit log once it holds n hits, or after 5s: a
// hit is recorded when its handler returns, which can follow the client's
// reading of the whole response.
func hitsAtLeast(w interface{ Hits() []Hit }, n int) []Hit {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if hits := w.Hits(); len(hits) >= n || time.Now().After(deadline) {
			return hits
		}
	}
}

func startWeb(t testing.TB, cfg Config) *Web {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// extractLinks returns the resolved, normalised targets of <a href> in body,
// honouring <base href>.
func extractLinks(t testing.TB, base string, body []byte) []string {
	t.Helper()
	var out []string
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		for _, a := range tok.Attr {
			if a.Key != "href" {
				continue
			}
			switch tok.Data {
			case "base":
				base = resolve(base, a.Val)
			case "a":
				out = append(out, resolve(base, a.Val))
			}
		}
	}
}

func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestDeterminism(t *testing.T) {
	first := netip.MustParseAddr("127.31.64.1")
	port := freePort(t, first.String())
	snapshot := func(seed int64) (hosts []byte, exp, dis, seeds []string, home []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, err := Start(ctx, Config{Hosts: 9, HostsPerIP: 3, PagesPerHost: 8, Seed: seed, FirstIP: first, Port: port})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer w.Close()
		s, p := w.lookup(w.Seeds()[0])
		return w.HostsFile(), w.Expected(), w.Disallowed(), w.Seeds(), w.body(s.res[p])
	}
	h1, e1, d1, s1, b1 := snapshot(7)
	h2, e2, d2, s2, b2 := snapshot(7)
	if !bytes.Equal(h1, h2) || !slices.Equal(e1, e2) || !slices.Equal(d1, d2) || !slices.Equal(s1, s2) || !bytes.Equal(b1, b2) {
		t.Fatal("same seed gave a different web")
	}
	if !strings.Contains(string(h1), "127.31.64.3 h008.petrel.test") {
		t.Errorf("hosts file lacks the expected line:\n%s", h1)
	}
	_, e3, _, _, b3 := snapshot(8)
	if slices.Equal(e1, e3) && bytes.Equal(b1, b3) {
		t.Error("different seeds gave the same web")
	}
}

func TestStartErrors(t *testing.T) {
	for _, cfg := range []Config{
		{FirstIP: netip.MustParseAddr("10.0.0.1")},
		{Port: -1},
		{Port: 70000},
	} {
		if w, err := Start(context.Background(), cfg); err == nil {
			w.Close()
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}

// TestExpectedByCrawling walks the live web with a real client, as a
// crawler would, and checks that it finds exactly Expected and Disallowed,
// that every response answers as the URL promises, and that the hit log
// recorded every request.
func TestExpectedByCrawling(t *testing.T) {
	w := startWeb(t, Config{Hosts: 13, HostsPerIP: 4, PagesPerHost: 12, Seed: 42, FirstIP: netip.MustParseAddr("127.31.65.1")})
	c := client(t, w, 5*time.Second)
	hosts := hostsMap(t, w.HostsFile())

	get := func(u string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: body: %v", u, err)
		}
		if resp.ContentLength != int64(len(b)) {
			t.Errorf("GET %s: Content-Length %d, body %d", u, resp.ContentLength, len(b))
		}
		return resp, b
	}
	robots := map[string]*robotsRules{}
	rulesFor := func(u *url.URL) *robotsRules {
		if r, ok := robots[u.Host]; ok {
			return r
		}
		resp, b := get("http://" + u.Host + "/robots.txt")
		var r *robotsRules
		if resp.StatusCode == 200 {
			r = parseRobots(b, "petrel")
		}
		robots[u.Host] = r
		return r
	}

	fetched := map[string]bool{}
	disallowed := map[string]bool{}
	seen := map[string]bool{}
	queue := w.Seeds()
	var bodies = map[string][]byte{}
	for _, s := range queue {
		seen[s] = true
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		pu, _ := url.Parse(u)
		if !rulesFor(pu).allowed(pu.RequestURI()) {
			disallowed[u] = true
			continue
		}
		fetched[u] = true
		resp, body := get(u)
		var next []string
		switch {
		case strings.Contains(u, "/missing/"):
			if resp.StatusCode != 404 {
				t.Errorf("%s: status %d, want 404", u, resp.StatusCode)
			}
		case strings.Contains(u, "/r/"):
			if resp.StatusCode != 301 && resp.StatusCode != 302 {
				t.Errorf("%s: status %d, want a redirect", u, resp.StatusCode)
			}
			next = append(next, resolve(u, resp.Header.Get("Location")))
		default:
			if resp.StatusCode != 200 {
				t.Errorf("%s: status %d, want 200", u, resp.StatusCode)
			}
			bodies[u] = body
			ct := resp.Header.Get("Content-Type")
			if strings.HasPrefix(ct, "text/html") {
				next = extractLinks(t, u, body)
			} else if strings.HasSuffix(u, ".png") && ct != "image/png" {
				t.Errorf("%s: Content-Type %q", u, ct)
			}
		}
		for _, n := range next {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	t.Logf("crawled %d URLs, %d disallowed, %d robots files", len(fetched), len(disallowed), len(robots))
	if got, want := sortedKeys(fetched), w.Expected(); !slices.Equal(got, want) {
		t.Errorf("crawl fetched %d URLs, Expected has %d\nonly crawled: %v\nonly expected: %v", len(got), len(want), minus(got, want), minus(want, got))
	}
	if got, want := sortedKeys(disallowed), w.Disallowed(); !slices.Equal(got, want) {
		t.Errorf("disallowed differ:\ncrawl: %v\nweb: %v", got, want)
	}

	// Every normal page of every host is reachable unless disallowed.
	exp := map[string]bool{}
	for _, u := range w.Expected() {
		exp[u] = true
	}
	kinds := map[string]int{}
	for _, s := range w.sites {
		for k := 1; k < 12; k++ {
			if u := fmt.Sprintf("%s/p/%d.html", s.origin, k); !exp[u] {
				t.Errorf("%s unreachable", u)
			}
		}
		for _, p := range []string{"/", "/landing.html", "/today.html", "/today-print.html", "/img/logo.png", "/files/notes.txt", "/r/1", "/r/2"} {
			if !exp[s.origin+p] {
				t.Errorf("%s%s not expected", s.origin, p)
			}
		}
		for u := range exp {
			switch {
			case strings.HasPrefix(u, s.origin+"/copy/"):
				kinds["copy"]++
				p := strings.Replace(u, "/copy/", "/p/", 1)
				if !bytes.Equal(bodies[u], bodies[p]) {
					t.Errorf("%s is not an exact duplicate of %s", u, p)
				}
			case strings.HasPrefix(u, s.origin+"/private/"):
				kinds["private"]++
			case strings.HasPrefix(u, s.origin+"/missing/"):
				kinds["missing"]++
			case strings.Contains(u, "?sort="):
				kinds["query"]++
			}
		}
		a, b := bodies[s.origin+"/today.html"], bodies[s.origin+"/today-print.html"]
		digits := regexp.MustCompile(`[0-9]`)
		if bytes.Equal(a, b) || !bytes.Equal(digits.ReplaceAll(a, nil), digits.ReplaceAll(b, nil)) {
			t.Errorf("%s: today pages are not near-duplicates differing only in digits", s.name)
		}
		if d := len(bodies[s.origin+"/p/1.html"]) - 2048; d < -300 || d > 300 {
			t.Errorf("%s/p/1.html is %d bytes, want about 2048", s.origin, len(bodies[s.origin+"/p/1.html"]))
		}
	}
	for _, k := range []string{"copy", "private", "missing", "query"} {
		if kinds[k] == 0 {
			t.Errorf("no %s URL expected", k)
		}
	}
	if len(w.Disallowed()) == 0 {
		t.Error("no disallowed URL")
	}
	for _, d := range w.Disallowed() {
		if exp[d] {
			t.Errorf("%s both expected and disallowed", d)
		}
	}

	// The hit log saw every request, robots.txt included, with sane times.
	want := len(fetched) + len(robots)
	hits := hitsAtLeast(w, want)
	if len(hits) != want {
		t.Errorf("%d hits, want %d", len(hits), want)
	}
	for i, h := range hits {
		if h.End.Before(h.Start) || h.Start.IsZero() {
			t.Errorf("hit %d: start %v end %v", i, h.Start, h.End)
		}
		if hosts[h.Host] != h.IP.String() {
			t.Errorf("hit %d: host %s arrived on %v", i, h.Host, h.IP)
		}
		if h.UserAgent == "" || h.Status == 0 {
			t.Errorf("hit %d: %+v", i, h)
		}
		if i > 0 && h.Start.Before(hits[i-1].Start) && h.End.Before(hits[i-1].End) {
			t.Errorf("hit %d out of order", i)
		}
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestHitLogCapAndFiles(t *testing.T) {
	w := startWeb(t, Config{Hosts: 2, HostsPerIP: 2, PagesPerHost: 4, MaxHits: 3, FirstIP: netip.MustParseAddr("127.31.66.1")})
	c := client(t, w, 5*time.Second)
	for range 5 {
		resp, err := c.Get(w.Seeds()[0])
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// A hit is recorded after its response is flushed: wait (bounded) for
	// the last one.
	for deadline := time.Now().Add(2 * time.Second); len(w.Hits())+int(w.DroppedHits()) < 5 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := len(w.Hits()); n != 3 {
		t.Errorf("%d hits kept, want 3", n)
	}
	if d := w.DroppedHits(); d != 2 {
		t.Errorf("%d hits dropped, want 2", d)
	}
	w.ResetHits()
	if len(w.Hits()) != 0 || w.DroppedHits() != 0 {
		t.Error("ResetHits left hits")
	}
	dir := t.TempDir()
	hp, sp, err := w.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := os.ReadFile(hp)
	sb, _ := os.ReadFile(sp)
	if !bytes.Equal(hb, w.HostsFile()) || !strings.Contains(string(sb), w.Seeds()[0]+"\n") {
		t.Errorf("files: hosts %q seeds %q", hb, sb)
	}
	if got := w.Addrs(); len(got) != 1 || got[0] != netip.MustParseAddr("127.31.66.1") {
		t.Errorf("Addrs = %v", got)
	}
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Start(ctx, Config{Hosts: 1, PagesPerHost: 4, FirstIP: netip.MustParseAddr("127.31.67.1")})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(w.Addrs()[0].String(), portOf(w.Seeds()[0])), time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening after cancel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
}

func portOf(u string) string {
	pu, _ := url.Parse(u)
	return pu.Port()
}

func BenchmarkServe(b *testing.B) {
	w := startWeb(b, Config{Hosts: 8, PagesPerHost: 50, PageBytes: 20 << 10, FirstIP: netip.MustParseAddr("127.31.68.1")})
	c := client(b, w, 5*time.Second)
	urls := w.Expected()
	b.SetBytes(20 << 10)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		resp, err := c.Get(urls[i%len(urls)])
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
