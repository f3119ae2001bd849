package testweb

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding/japanese"
)

func TestRobotsMatcher(t *testing.T) {
	rfc := "User-agent: *\nDisallow: /\n\nUser-agent: Petrel\nAllow: /$\nAllow: /allowed/\nDisallow: /allowed/but-not-this\nDisallow: /*.php$\nAllow: /page.php?\nDisallow: /fish*\nAllow: /fish/salmon.html\nDisallow: /a/*/c\nAllow: /tie\nDisallow: /tie\n"
	tests := []struct {
		robots, agent, path string
		want                bool
	}{
		{rfc, "petrel", "/", true},
		{rfc, "petrel", "/other.html", true},
		{rfc, "petrel", "/allowed/x.html", true},
		{rfc, "petrel", "/allowed/but-not-this.html", false},
		{rfc, "petrel", "/index.php", false},
		{rfc, "petrel", "/index.php?x=1", true},
		{rfc, "petrel", "/page.php?q=1", true},
		{rfc, "petrel", "/fish.html", false},
		{rfc, "petrel", "/fishing/", false},
		{rfc, "petrel", "/fish/salmon.html", true},
		{rfc, "petrel", "/a/b/c/d.html", false},
		{rfc, "petrel", "/a/c.html", true},
		{rfc, "petrel", "/tie.html", true},
		{rfc, "otherbot", "/other.html", false},
		{rfc, "otherbot", "/robots.txt", true},
		{"User-agent: *\nDisallow: /private/\nAllow: /private/open.html\n", "petrel", "/private/x.html", false},
		{"User-agent: *\nDisallow: /private/\nAllow: /private/open.html\n", "petrel", "/private/open.html", true},
		{"User-agent: *\nDisallow:\n", "petrel", "/anything", true},
		{"User-agent: a\nUser-agent: PETREL\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n", "petrel", "/y", true},
		{"User-agent: a\nUser-agent: PETREL\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n", "petrel", "/x1", false},
		{"User-agent: *\nDisallow: /*.gif$\n", "petrel", "/a.gif", false},
		{"User-agent: *\nDisallow: /*.gif$\n", "petrel", "/a.gif?x", true},
		{"garbage\x00\xff\n", "petrel", "/", true},
	}
	for _, tt := range tests {
		if got := parseRobots([]byte(tt.robots), tt.agent).allowed(tt.path); got != tt.want {
			t.Errorf("%q for %s under %q: allowed=%v, want %v", tt.path, tt.agent, tt.robots, got, tt.want)
		}
	}
}

// TestHostile checks that every hostile case behaves as described, with a
// bounded client.
func TestHostile(t *testing.T) {
	const bomb = 8 << 20
	w := startWeb(t, Config{Hosts: 4, PagesPerHost: 5, Hostile: true, BombBytes: bomb, HugeBytes: 3 << 20,
		FirstIP: netip.MustParseAddr("127.31.70.1")})
	c := client(t, w, 5*time.Second)
	short := client(t, w, 400*time.Millisecond)
	cases := map[string]Case{}
	for _, hc := range w.HostileCases() {
		if hc.Name == "" || hc.Host == "" || hc.Description == "" || hc.Expect == "" || hc.URL == "" {
			t.Errorf("incomplete case %+v", hc)
		}
		cases[hc.Name] = hc
	}
	if len(w.HostileSeeds()) != len(cases) || len(w.Seeds()) != len(w.NormalSeeds())+len(cases) {
		t.Errorf("seeds: %d hostile for %d cases", len(w.HostileSeeds()), len(cases))
	}
	hosts := hostsMap(t, w.HostsFile())
	if hosts["private.hostile.test"] != PrivateIP {
		t.Error("private.hostile.test not in the hosts file")
	}
	if _, ok := hosts["nowhere.hostile.test"]; ok {
		t.Error("nowhere.hostile.test is in the hosts file")
	}
	u := func(name, path string) string {
		hc, ok := cases[name]
		if !ok {
			t.Fatalf("no case %q", name)
		}
		return strings.TrimSuffix(hc.URL, "/") + path
	}
	fetch := func(c *http.Client, url string) (*http.Response, []byte, error) {
		resp, err := c.Get(url)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 128<<20))
		return resp, b, err
	}
	must := func(url string, status int) (*http.Response, []byte) {
		t.Helper()
		resp, b, err := fetch(c, url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		if resp.StatusCode != status {
			t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, status)
		}
		return resp, b
	}
	has := func(body []byte, s string) bool { return bytes.Contains(body, []byte(s)) }

	t.Run("traps", func(t *testing.T) {
		_, b := must(u("calendar", "/cal/2026/12/31"), 200)
		if !has(b, `href="/cal/2027/1/1"`) {
			t.Errorf("calendar does not link the next day: %s", b)
		}
		_, b = must(u("deep", "/a/a/a/"), 200)
		if !has(b, `href="a/"`) {
			t.Errorf("deep page does not deepen: %s", b)
		}
		_, b1 := must(u("session", "/s?sid=1"), 200)
		_, b2 := must(u("session", "/s?sid=2"), 200)
		if bytes.Equal(b1, b2) || !has(b1, "/s?sid=") {
			t.Error("session pages do not vary their sid links")
		}
	})
	t.Run("redirects", func(t *testing.T) {
		for _, code := range []int{301, 302, 303, 307, 308} {
			resp, _ := must(u("redirect", "/"+itoa(code)), code)
			loc := resp.Header.Get("Location")
			if code >= 303 && !strings.Contains(loc, "landing.hostile.test") || code < 303 && !strings.Contains(loc, "redirect.hostile.test") {
				t.Errorf("%d -> %s", code, loc)
			}
			must(loc, 200)
		}
		next, hops := u("chain", "/chain/1"), 0
		for ; hops < 20; hops++ {
			resp, _ := must(next, map[bool]int{true: 200, false: 302}[strings.HasSuffix(next, ".html")])
			if resp.StatusCode == 200 {
				break
			}
			next = resp.Header.Get("Location")
		}
		if hops != 10 {
			t.Errorf("chain has %d hops, want 10", hops)
		}
		resp, _ := must(u("loop", "/loop/a"), 302)
		resp2, _ := must(resp.Header.Get("Location"), 302)
		if resp2.Header.Get("Location") != u("loop", "/loop/a") {
			t.Errorf("loop does not loop: %s", resp2.Header.Get("Location"))
		}
	})
	t.Run("statuses", func(t *testing.T) {
		for _, code := range []int{404, 410, 500} {
			must(u("status", "/"+itoa(code)), code)
		}
		resp, _ := must(u("status", "/503"), 503)
		if resp.Header.Get("Retry-After") != "2" {
			t.Error("503 without Retry-After")
		}
	})
	t.Run("broken servers", func(t *testing.T) {
		if _, b, err := fetch(c, u("reset", "/")); err == nil {
			t.Errorf("reset: read %d bytes without error", len(b))
		}
		if _, _, err := fetch(short, u("blackhole", "/")); !isTimeout(err) {
			t.Errorf("blackhole: %v, want a timeout", err)
		}
		resp, _, err := fetch(short, u("stall", "/"))
		if !isTimeout(err) || resp == nil || resp.StatusCode != 200 {
			t.Errorf("stall: %v, want headers then a timeout", err)
		}
		if _, _, err := fetch(c, u("big-headers", "/")); err == nil || !strings.Contains(err.Error(), "header") {
			t.Errorf("big-headers: %v, want a header size error", err)
		}
		if _, _, err := fetch(c, u("bad-status", "/")); err == nil || !strings.Contains(err.Error(), "status") {
			t.Errorf("bad-status: %v, want a status line error", err)
		}
		if _, b, err := fetch(c, u("overlength", "/")); err != nil || len(b) != 100 {
			t.Errorf("overlength: %d bytes, %v; want the announced 100", len(b), err)
		}
		if _, _, err := fetch(c, u("chunk-cut", "/")); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("chunk-cut: %v, want unexpected EOF", err)
		}
		// robots.txt of a raw host answers cleanly.
		must(u("blackhole", "/robots.txt"), 404)
		start := time.Now()
		resp, _, err = fetch(short, u("trickle", "/slow.html"))
		if !isTimeout(err) || resp == nil || time.Since(start) > 3*time.Second {
			t.Errorf("trickle: %v, want headers then a timeout", err)
		}
		if _, _, err := fetch(short, u("robots-timeout", "/robots.txt")); !isTimeout(err) {
			t.Errorf("robots-timeout: %v", err)
		}
	})
	t.Run("big bodies", func(t *testing.T) {
		// The bombs are built before the first is asked for: the client's
		// timeout bounds their transfer, not the web's building of them.
		w.buildBombs()
		resp, b := must(u("huge", "/huge.html"), 200)
		if resp.ContentLength != 3<<20 || len(b) != 3<<20 {
			t.Errorf("huge: Content-Length %d, %d bytes", resp.ContentLength, len(b))
		}
		for _, tc := range []struct {
			name string
			dec  func(io.Reader) (io.Reader, error)
		}{
			{"gzip-bomb", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
			{"deflate-bomb", func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
			{"brotli-bomb", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
		} {
			resp, b := must(u(tc.name, "/bomb.html"), 200)
			if resp.Header.Get("Content-Encoding") == "" {
				t.Errorf("%s: no Content-Encoding", tc.name)
			}
			r, err := tc.dec(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			n, err := io.Copy(io.Discard, io.LimitReader(r, bomb+1))
			if err != nil || n != bomb || len(b)*100 > bomb {
				t.Errorf("%s: %d bytes decode to %d (%v)", tc.name, len(b), n, err)
			}
		}
	})
	t.Run("content", func(t *testing.T) {
		_, b := must(u("soup", "/"), 200)
		links := extractLinks(t, u("soup", "/"), b)
		for _, want := range []string{"/soup/1.html", "/soup/2.html", "/soup/3.html", "/soup/4.html", "/soup/5.html?a=1&b=2"} {
			if !containsStr(links, u("soup", want)) {
				t.Errorf("soup: link %s not found in %v", want, links)
			}
		}
		if len(links) != 5 {
			t.Errorf("soup: %d links, want 5", len(links))
		}
		resp, b := must(u("cp1252", "/"), 200)
		if !strings.Contains(resp.Header.Get("Content-Type"), "windows-1252") || !has(b, "/caf\xe9.html") {
			t.Error("cp1252 page is not windows-1252")
		}
		must(u("cp1252", "/caf%C3%A9.html"), 200)
		_, b = must(u("sjis", "/"), 200)
		dec, err := japanese.ShiftJIS.NewDecoder().Bytes(b)
		if err != nil || !has(dec, `href="/日本.html"`) || has(b, "日本") {
			t.Errorf("sjis page is not Shift_JIS: %v", err)
		}
		must(u("sjis", "/%E6%97%A5%E6%9C%AC.html"), 200)
		_, b = must(u("base", "/"), 200)
		links = extractLinks(t, u("base", "/"), b)
		if !containsStr(links, u("landing", "/base/a.html")) || !containsStr(links, u("landing", "/root.html")) {
			t.Errorf("base links: %v", links)
		}
		_, b = must(u("many-links", "/"), 200)
		if n := len(extractLinks(t, u("many-links", "/"), b)); n != 10000 {
			t.Errorf("many-links has %d links", n)
		}
		_, a := must(u("dups", "/a.html"), 200)
		_, c2 := must(u("dups", "/c.html"), 200)
		if !bytes.Equal(a, c2) {
			t.Error("dups differ")
		}
		if g := w.NearDuplicates(); len(g) != 2 || len(g[0]) != 3 {
			t.Errorf("near duplicates %v", g)
		}
		_, n1 := must(w.NearDuplicates()[0][0], 200)
		_, n2 := must(w.NearDuplicates()[0][1], 200)
		if bytes.Equal(n1, n2) || len(n1)-len(n2) > 40 || len(n2)-len(n1) > 40 {
			t.Error("near duplicates are not near")
		}
		resp, _ = must(u("robots-meta", "/x-robots.html"), 200)
		if resp.Header.Get("X-Robots-Tag") != "nofollow" {
			t.Error("no X-Robots-Tag")
		}
		_, b = must(u("robots-meta", "/nofollow.html"), 200)
		if !has(b, "nofollow") || len(w.NoFollowed()) != 3 {
			t.Error("nofollow case incomplete")
		}
		resp, b = must(u("mislabelled", "/image.html"), 200)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || http.DetectContentType(b) != "image/png" {
			t.Error("mislabelled is not a PNG labelled text/html")
		}
	})
	t.Run("robots", func(t *testing.T) {
		_, b := must(u("robots-huge", "/robots.txt"), 200)
		r := parseRobots(b, "petrel")
		if len(b) < 500<<10 || r.allowed("/early/x.html") || !r.allowed("/late/x.html") {
			t.Errorf("robots-huge: %d bytes", len(b))
		}
		_, b = must(u("robots-garbage", "/robots.txt"), 200)
		if !parseRobots(b, "petrel").allowed("/page.html") {
			t.Error("garbage robots disallows")
		}
		resp, _ := must(u("robots-redirect", "/robots.txt"), 301)
		resp, _ = must(resp.Header.Get("Location"), 302)
		_, b = must(resp.Header.Get("Location"), 200)
		if parseRobots(b, "petrel").allowed("/secret/x.html") {
			t.Error("redirected robots allows /secret/")
		}
		dis := w.Disallowed()
		for _, want := range []string{u("robots-rfc", "/index.php"), u("robots-huge", "/early/x.html"), u("robots-redirect", "/secret/x.html")} {
			if !containsStr(dis, want) {
				t.Errorf("%s not in Disallowed", want)
			}
		}
		if containsStr(dis, u("robots-rfc", "/a/c.html")) {
			t.Error("/a/c.html disallowed")
		}
	})
	// Raw hosts log their hits too.
	var rawHits int
	for _, h := range w.Hits() {
		if h.Host == "overlength.hostile.test" {
			rawHits++
			if h.End.Before(h.Start) || h.Path != "/" || h.Status != 200 {
				t.Errorf("raw hit %+v", h)
			}
		}
	}
	if rawHits != 1 {
		t.Errorf("%d hits on overlength, want 1", rawHits)
	}
	// Close releases held connections promptly, a blackholed request included.
	held, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(u("blackhole", "/"), "http://"), "/"))
	if err != nil {
		hp := strings.TrimSuffix(strings.TrimPrefix(u("blackhole", "/"), "http://blackhole.hostile.test"), "/")
		held, err = net.Dial("tcp", hosts["blackhole.hostile.test"]+hp)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	held.Write([]byte("GET /x HTTP/1.1\r\nHost: blackhole.hostile.test\r\n\r\n"))
	done := make(chan error, 1)
	go func() { done <- w.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return err != nil && (errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "Timeout") || strings.Contains(err.Error(), "deadline"))
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }
