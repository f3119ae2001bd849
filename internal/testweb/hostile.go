package testweb

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding/japanese"
)

// Case describes one hostile case: where it is served and what a correct
// crawler does with it.
type Case struct {
	Name        string // short identifier, e.g. "calendar"
	Host        string // host name serving the case
	Description string // what the server does
	Expect      string // what a correct crawler does
	URL         string // entry URL (also in Seeds and HostileSeeds)
}

// HostileCases returns the hostile cases (nil unless Config.Hostile).
func (w *Web) HostileCases() []Case { return append([]Case(nil), w.cases...) }

// NoFollowed returns the URLs linked only from pages whose links must not be
// followed (nofollow meta, X-Robots-Tag, rel=nofollow); a correct crawler
// never requests them. Nil unless Config.Hostile.
func (w *Web) NoFollowed() []string { return append([]string(nil), w.nofollowed...) }

// NearDuplicates returns the groups of near-duplicate URLs of the hostile
// web's near-duplicate case (pages differing in a few words); pages of
// different groups, and the case's other pages, are not near-duplicates.
func (w *Web) NearDuplicates() [][]string {
	out := make([][]string, len(w.nearDups))
	for i, g := range w.nearDups {
		out[i] = append([]string(nil), g...)
	}
	return out
}

// HostileDomain is the parent domain of every hostile host.
const HostileDomain = "hostile.test"

// PrivateIP is where the hostile name "private.hostile.test" points in the
// hosts file; nothing listens there and a correct crawler never dials it.
const PrivateIP = "10.255.255.1"

// hspec names one hostile host and how it is served.
type hspec struct {
	name string
	raw  func(net.Conn, *rawRequest, <-chan struct{}) int
}

// buildHostile binds one address per hostile host, starting at ip, builds
// their content and returns the functions that start serving them.
func (w *Web) buildHostile(ip netip.Addr) ([]func(), error) {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 0x5eed))
	bigHeaders := func() []byte {
		var b bytes.Buffer
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
		line := strings.Repeat("x", 1000)
		for i := 0; b.Len() < 1<<20; i++ {
			fmt.Fprintf(&b, "X-Filler-%d: %s\r\n", i, line)
		}
		b.WriteString("Content-Length: 6\r\nConnection: close\r\n\r\nhello\n")
		return b.Bytes()
	}()
	html200 := "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
	specs := []hspec{
		{name: "calendar"}, {name: "deep"}, {name: "session"},
		{name: "redirect"}, {name: "chain"}, {name: "loop"}, {name: "landing"},
		{name: "status"}, {name: "trickle"}, {name: "huge"},
		{name: "gzip-bomb"}, {name: "deflate-bomb"}, {name: "brotli-bomb"},
		{name: "soup"}, {name: "cp1252"}, {name: "sjis"}, {name: "base"},
		{name: "many-links"}, {name: "dups"}, {name: "near-dups"},
		{name: "robots-meta"}, {name: "mislabelled"},
		{name: "robots-huge"}, {name: "robots-garbage"}, {name: "robots-redirect"},
		{name: "robots-timeout"}, {name: "robots-rfc"},
		{name: "reset", raw: func(c net.Conn, _ *rawRequest, _ <-chan struct{}) int {
			c.Write([]byte(html200 + "Content-Length: 1048576\r\n\r\n"))
			c.Write(bytes.Repeat([]byte("<p>reset soon</p>\n"), 1000))
			if tc, ok := c.(interface{ SetLinger(int) error }); ok {
				tc.SetLinger(0) // Close now sends RST
			}
			return 200
		}},
		{name: "blackhole", raw: func(_ net.Conn, _ *rawRequest, done <-chan struct{}) int {
			hold(done, 10*time.Minute)
			return 0
		}},
		{name: "stall", raw: func(c net.Conn, _ *rawRequest, done <-chan struct{}) int {
			c.Write([]byte(html200 + "Content-Length: 5000\r\n\r\n<html><body><p>and then nothing"))
			hold(done, 10*time.Minute)
			return 200
		}},
		{name: "big-headers", raw: func(c net.Conn, _ *rawRequest, _ <-chan struct{}) int {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			c.Write(bigHeaders)
			return 200
		}},
		{name: "bad-status", raw: func(c net.Conn, _ *rawRequest, _ <-chan struct{}) int {
			c.Write([]byte("HTTP/1.1 2x0 Whatever\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n"))
			return 0
		}},
		{name: "overlength", raw: func(c net.Conn, _ *rawRequest, _ <-chan struct{}) int {
			body := bytes.Repeat([]byte("<p>longer than announced</p>\n"), 200)
			c.Write([]byte(html200 + "Content-Length: 100\r\n\r\n"))
			c.Write(body)
			return 200
		}},
		{name: "chunk-cut", raw: func(c net.Conn, _ *rawRequest, _ <-chan struct{}) int {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"))
			chunk := bytes.Repeat([]byte("x"), 1024)
			for range 3 {
				c.Write([]byte("400\r\n"))
				c.Write(chunk)
				c.Write([]byte("\r\n"))
			}
			c.Write([]byte("400\r\n"))
			c.Write(chunk[:100])
			return 200
		}},
	}
	type bound struct {
		s  *site
		ln net.Listener
		sp hspec
	}
	var all []bound
	hs := map[string]*site{}
	for i, sp := range specs {
		if i > 0 {
			var err error
			if ip, err = nextAddr(ip); err != nil {
				return nil, err
			}
		}
		ln, port, err := w.listen(ip)
		if err != nil {
			return nil, err
		}
		name := sp.name + "." + HostileDomain
		s := &site{name: name, ip: ip, port: port, origin: origin(name, port), res: map[string]*resource{}}
		w.byName[name] = s
		w.hsites = append(w.hsites, s)
		w.hosts = append(w.hosts, hostsLine{ip.String(), name})
		w.addrs = append(w.addrs, ip)
		hs[sp.name] = s
		all = append(all, bound{s, ln, sp})
	}
	w.hosts = append(w.hosts, hostsLine{PrivateIP, "private." + HostileDomain})

	var starts []func()
	for _, b := range all {
		b := b
		if b.sp.raw != nil {
			starts = append(starts, func() { w.startRaw(b.ln, b.s.ip, b.sp.raw) })
		} else {
			starts = append(starts, func() { w.serveHTTP(b.ln, b.s.ip, []*site{b.s}) })
		}
	}
	w.hostileContent(hs, rng)
	return starts, nil
}

// leaf is a small page without links; text makes it unique.
func leaf(title, text string) []byte {
	head, tail := htmlPage(title, text, "", nil)
	return append(head, tail...)
}

// page builds a static HTML resource at path on s linking to hrefs.
func (w *Web) page(s *site, path, title, extraHead string, hrefs ...string) *resource {
	var links []link
	for _, h := range hrefs {
		links = append(links, link{href: h, text: h, target: resolve(s.origin+path, h)})
	}
	head, tail := htmlPage(title, "Hostile case "+s.name+".", extraHead, links)
	res := &resource{status: 200, ctype: "text/html; charset=utf-8", head: head, tail: tail}
	for _, l := range links {
		res.links = append(res.links, l.target)
	}
	s.res[path] = w.finish(res)
	return res
}

// raw stores a resource with the given body.
func (w *Web) raw(s *site, path string, status int, ctype string, body []byte, header ...[2]string) *resource {
	res := w.finish(&resource{status: status, ctype: ctype, head: body, header: header})
	s.res[path] = res
	return res
}

// redirect stores a redirect from path on s to target (absolute or path).
func (w *Web) redirect(s *site, path string, status int, target string) {
	t := resolve(s.origin+path, target)
	s.res[path] = w.finish(&resource{status: status, location: t})
}

// leafDynamic answers every unknown path with a small page.
func leafDynamic(s *site) func(*Web, http.ResponseWriter, *http.Request) (int, bool) {
	return func(_ *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if r.URL.Path == "/robots.txt" {
			return 0, false
		}
		writeBody(rw, 200, "text/html; charset=utf-8", leaf(s.name+" "+r.URL.Path, "Leaf page "+htmlEscape(r.URL.RequestURI())+"."))
		return 200, true
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

var (
	calRE  = regexp.MustCompile(`^/cal/(\d{4})/(\d{1,2})/(\d{1,2})$`)
	deepRE = regexp.MustCompile(`^(/a)+/$`)
)

// hostileContent fills every hostile site and records its case.
func (w *Web) hostileContent(hs map[string]*site, rng *rand.Rand) {
	addCase := func(name, desc, expect string) {
		s := hs[name]
		u := s.origin + "/"
		w.cases = append(w.cases, Case{Name: name, Host: s.name, Description: desc, Expect: expect, URL: u})
		w.hseeds = append(w.hseeds, u)
	}
	landing := hs["landing"]
	landing.dynamic = leafDynamic(landing)
	w.page(landing, "/", "landing", "", "/welcome.html")
	addCase("landing", "Target host of cross-host redirects and of the base-href case; any path answers 200.",
		"Every redirect target and base-resolved link pointing here is fetched once.")

	// Traps.
	cal := hs["calendar"]
	w.page(cal, "/", "calendar", "", "/cal/2026/11/30")
	cal.dynamic = func(_ *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		m := calRE.FindStringSubmatch(r.URL.Path)
		if m == nil {
			return 0, false
		}
		t, err := time.Parse("2006/1/2", m[1]+"/"+m[2]+"/"+m[3])
		if err != nil {
			return 0, false
		}
		f := func(d time.Time) string { return d.Format("/cal/2006/1/2") }
		body := leafLinks("Calendar "+t.Format("Monday 2 January 2006"), "Nothing happens on this day.",
			f(t.AddDate(0, 0, 1)), f(t.AddDate(0, 0, -1)), f(t.AddDate(0, 1, 0)))
		writeBody(rw, 200, "text/html; charset=utf-8", body)
		return 200, true
	}
	addCase("calendar", "Infinite calendar: /cal/Y/M/D links to the next and previous day and the next month, forever.",
		"Bounded by the per-host budget, --max-depth and the duplicate digest (pages differ only in dates); the crawl of other hosts goes on and this host ends.")

	deep := hs["deep"]
	w.page(deep, "/", "deep", "", "/a/")
	deep.dynamic = func(_ *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if !deepRE.MatchString(r.URL.Path) || len(r.URL.Path) > 64<<10 {
			return 0, false
		}
		writeBody(rw, 200, "text/html; charset=utf-8", leafLinks("Deeper", "Depth "+strconv.Itoa(len(r.URL.Path)/2)+".", "a/", "../"))
		return 200, true
	}
	addCase("deep", "Endlessly deepening paths: /a/ links to a/ (so /a/a/, /a/a/a/, ...).",
		"Cut by the repeated-path-segment rule, --max-depth or the URL length limit (2 KiB); the cut URLs are counted by reason.")

	sess := hs["session"]
	w.page(sess, "/", "session", "", "/s?sid=1")
	sess.dynamic = func(_ *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if r.URL.Path != "/s" && r.URL.Path != "/s/other" {
			return 0, false
		}
		h := fnv.New64a()
		h.Write([]byte(r.URL.RawQuery))
		sid := strconv.FormatUint(h.Sum64(), 16)
		writeBody(rw, 200, "text/html; charset=utf-8", leafLinks("Session page", "Welcome back.", "/s?sid="+sid, "/s/other?sid="+sid+"x"))
		return 200, true
	}
	addCase("session", "Session ids in query strings: every page links to the same pages under a fresh sid.",
		"Bounded by the per-host budget and the duplicate digest; the host ends.")

	// Redirects.
	rd := hs["redirect"]
	for _, code := range []int{301, 302, 303, 307, 308} {
		c := strconv.Itoa(code)
		if code <= 302 {
			w.redirect(rd, "/"+c, code, "/target-"+c+".html")
			w.page(rd, "/target-"+c+".html", "target of "+c+" on "+rd.name, "")
		} else {
			w.redirect(rd, "/"+c, code, landing.origin+"/from-redirect-"+c+".html")
		}
	}
	w.page(rd, "/", "redirects", "", "/301", "/302", "/303", "/307", "/308")
	addCase("redirect", "301, 302 (to pages on the same host) and 303, 307, 308 (to landing.hostile.test).",
		"Each source is fetched once and recorded; each Location goes back through the frontier and each target is fetched exactly once.")

	ch := hs["chain"]
	for k := 1; k < 10; k++ {
		w.redirect(ch, "/chain/"+strconv.Itoa(k), 302, "/chain/"+strconv.Itoa(k+1))
	}
	w.redirect(ch, "/chain/10", 302, "/chain-end.html")
	w.page(ch, "/chain-end.html", "end of the long chain", "")
	for k := 1; k < 3; k++ {
		w.redirect(ch, "/short/"+strconv.Itoa(k), 301, "/short/"+strconv.Itoa(k+1))
	}
	w.redirect(ch, "/short/3", 301, "/short-end.html")
	w.page(ch, "/short-end.html", "end of the short chain", "")
	w.page(ch, "/", "chains", "", "/chain/1", "/short/1")
	addCase("chain", "A chain of 10 redirects /chain/1 -> ... -> /chain/10 -> /chain-end.html and a chain of 3 /short/1 -> ... -> /short-end.html.",
		"The long chain is cut after --max-redirects (5) hops: /chain/6 and later and /chain-end.html are never fetched; the short chain is followed to /short-end.html.")

	lp := hs["loop"]
	w.redirect(lp, "/loop/a", 302, "/loop/b")
	w.redirect(lp, "/loop/b", 302, "/loop/a")
	w.redirect(lp, "/self", 301, "/self")
	w.page(lp, "/", "loops", "", "/loop/a", "/self")
	addCase("loop", "Redirect loops: /loop/a <-> /loop/b, and /self -> /self.",
		"Each URL is fetched at most once (the sieve drops the repeat); the crawl goes on.")

	// Errors.
	st := hs["status"]
	w.raw(st, "/404", 404, "text/html; charset=utf-8", leaf("404", "Not found here."))
	w.raw(st, "/410", 410, "text/html; charset=utf-8", leaf("410", "Gone for good."))
	w.raw(st, "/500", 500, "text/html; charset=utf-8", leaf("500", "Internal error."))
	w.raw(st, "/503", 503, "text/html; charset=utf-8", leaf("503", "Try again later."), [2]string{"Retry-After", "2"})
	w.page(st, "/", "statuses", "", "/404", "/410", "/500", "/503")
	addCase("status", "404, 410, 500 and 503 (with Retry-After: 2) responses with HTML bodies.",
		"All recorded in the WARC; 500 and 503 retried with a delay (honouring Retry-After) up to the retry limit; the crawl goes on.")

	tr := hs["trickle"]
	w.page(tr, "/", "trickle", "", "/slow.html")
	tr.dynamic = func(w *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if r.URL.Path != "/slow.html" {
			return 0, false
		}
		const size = 1 << 20
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Length", strconv.Itoa(size))
		rw.WriteHeader(200)
		chunk := bytes.Repeat([]byte("s"), 1024)
		t := time.NewTicker(100 * time.Millisecond) // 10 KiB/s
		defer t.Stop()
		f, _ := rw.(http.Flusher)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := rw.Write(chunk); err != nil {
				break
			}
			if f != nil {
				f.Flush()
			}
			select {
			case <-t.C:
			case <-r.Context().Done():
				return 200, true
			case <-w.done:
				return 200, true
			}
		}
		return 200, true
	}
	addCase("trickle", "/slow.html sends 1 MiB at 10 KiB/s (about 100 s).",
		"The total fetch timeout ends it; recorded as failed (or truncated), the crawl goes on.")

	hg := hs["huge"]
	w.page(hg, "/", "huge", "", "/huge.html")
	hg.dynamic = func(w *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if r.URL.Path != "/huge.html" {
			return 0, false
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Length", strconv.FormatInt(w.cfg.HugeBytes, 10))
		rw.WriteHeader(200)
		buf := bytes.Repeat([]byte("<p>huge page huge page huge page huge page huge page</p>\n"), 1200)[:64<<10]
		for left := w.cfg.HugeBytes; left > 0; {
			n := min(left, int64(len(buf)))
			if _, err := rw.Write(buf[:n]); err != nil {
				break
			}
			left -= n
		}
		return 200, true
	}
	addCase("huge", "/huge.html is a 64 MiB HTML page (Config.HugeBytes) with Content-Length.",
		"Truncated at --max-body, the WARC record marked WARC-Truncated: length; the crawl goes on.")

	for _, b := range []struct{ name, enc string }{{"gzip-bomb", "gzip"}, {"deflate-bomb", "deflate"}, {"brotli-bomb", "br"}} {
		s := hs[b.name]
		enc := b.enc
		w.page(s, "/", b.name, "", "/bomb.html")
		s.dynamic = func(w *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
			if r.URL.Path != "/bomb.html" {
				return 0, false
			}
			w.buildBombs()
			body := map[string][]byte{"gzip": w.bombs.gzip, "deflate": w.bombs.zlib, "br": w.bombs.br}[enc]
			rw.Header().Set("Content-Encoding", enc)
			writeBody(rw, 200, "text/html; charset=utf-8", body)
			return 200, true
		}
		addCase(b.name, "/bomb.html is "+enc+"-encoded and decodes to Config.BombBytes (default 256 MiB) of zeros.",
			"Stored as transferred (encoded); the decoded size is capped at --max-body before parsing; memory stays bounded.")
	}

	// Content.
	soup := hs["soup"]
	soup.dynamic = leafDynamic(soup)
	w.raw(soup, "/", 200, "text/html; charset=utf-8", []byte("<html><head><title>soup \xff\xfe broken</title><body><p>unclosed <b><i>bold \xc3\x28 text\n"+
		"<a href=/soup/1.html>one</a> <A HREF='/soup/2.html'>two<a href=\"/soup/3.html\"  >three</p></div></span>\n"+
		"<table><tr><td><a\nhref = \"/soup/4.html\">four</td></table><p><a href=\"/soup/5.html?a=1&amp;b=2\">five\n<!-- <a href=\"/soup/comment.html\"> -->\n"))
	s := soup.res["/"]
	s.links = []string{soup.origin + "/soup/1.html", soup.origin + "/soup/2.html", soup.origin + "/soup/3.html", soup.origin + "/soup/4.html", soup.origin + "/soup/5.html?a=1&b=2"}
	addCase("soup", "Invalid UTF-8 and tag soup (unquoted and upper-case attributes, unclosed tags, a link in a comment, no </html>).",
		"Links /soup/1.html to /soup/4.html and /soup/5.html?a=1&b=2 (entity-decoded) found and fetched; /soup/comment.html (inside a comment) is not a link.")

	cp := hs["cp1252"]
	cp.dynamic = leafDynamic(cp)
	w.raw(cp, "/", 200, "text/html; charset=windows-1252", []byte("<html><head><title>caf\xe9</title></head><body><p>\x93Quoted\x94 text \x96 with a dash.</p><a href=\"/caf\xe9.html\">caf\xe9</a></body></html>\n"))
	cp.res["/"].links = []string{cp.origin + "/caf%C3%A9.html"}
	addCase("cp1252", "A windows-1252 page (charset in the Content-Type header) linking to /caf\\xe9.html.",
		"Decoded as windows-1252 for link extraction: the link becomes /caf%C3%A9.html (fetched, 200); stored as received.")

	sj := hs["sjis"]
	sj.dynamic = leafDynamic(sj)
	sjBody, _ := japanese.ShiftJIS.NewEncoder().String("<html><head><meta charset=\"Shift_JIS\"><title>日本語のページ</title></head><body><p>これは日本語です。</p><a href=\"/日本.html\">日本</a></body></html>\n")
	w.raw(sj, "/", 200, "text/html", []byte(sjBody))
	sj.res["/"].links = []string{sj.origin + "/%E6%97%A5%E6%9C%AC.html"}
	addCase("sjis", "A Shift_JIS page (charset only in <meta charset>) linking to /日本.html.",
		"Decoded as Shift_JIS: the link becomes /%E6%97%A5%E6%9C%AC.html (fetched, 200); stored as received.")

	bs := hs["base"]
	bs.dynamic = leafDynamic(bs)
	w.raw(bs, "/", 200, "text/html; charset=utf-8", []byte("<html><head><base href=\""+landing.origin+"/base/\"><title>base</title></head><body><a href=\"a.html\">a</a> <a href=\"sub/b.html\">b</a> <a href=\"/root.html\">root</a></body></html>\n"))
	bs.res["/"].links = []string{landing.origin + "/base/a.html", landing.origin + "/base/sub/b.html", landing.origin + "/root.html"}
	addCase("base", "<base href> pointing to landing.hostile.test/base/ with relative links.",
		"Links resolve against the base: landing.hostile.test /base/a.html, /base/sub/b.html and /root.html are fetched; nothing relative is fetched from base.hostile.test.")

	ml := hs["many-links"]
	ml.dynamic = leafDynamic(ml)
	var mb bytes.Buffer
	mb.WriteString("<html><head><title>10000 links</title></head><body>\n")
	for i := range 10000 {
		fmt.Fprintf(&mb, "<a href=\"/l/%d.html\">link %d</a>\n", i, i)
	}
	mb.WriteString("</body></html>\n")
	w.raw(ml, "/", 200, "text/html; charset=utf-8", mb.Bytes())
	addCase("many-links", "One page with 10,000 links to /l/N.html.",
		"At most --max-links (default 5000) links are followed; the cut is counted.")

	dp := hs["dups"]
	dup := leaf("the same page", "Exactly the same bytes under three URLs: "+sentence(rng, 20)+".")
	for _, p := range []string{"/a.html", "/b.html", "/c.html"} {
		w.raw(dp, p, 200, "text/html; charset=utf-8", dup)
	}
	w.page(dp, "/", "dups", "", "/a.html", "/b.html", "/c.html")
	addCase("dups", "/a.html, /b.html and /c.html serve the same bytes.",
		"All three fetched; the first stored as a response, the others as revisit records (identical-payload-digest) and counted as duplicates.")

	nd := hs["near-dups"]
	base := strings.Fields(sentence(rng, 200))
	other := strings.Fields(sentence(rng, 200))
	variant := func(src []string, changes int) string {
		v := append([]string(nil), src...)
		for range changes {
			v[rng.IntN(len(v))] = word(rng)
		}
		return strings.Join(v, " ")
	}
	texts := []string{variant(base, 0), variant(base, 2), variant(base, 3), variant(other, 0), variant(other, 1),
		sentence(rng, 200), sentence(rng, 200), sentence(rng, 200)}
	var hrefs []string
	for i, t := range texts {
		p := "/n/" + strconv.Itoa(i+1) + ".html"
		hrefs = append(hrefs, p)
		w.raw(nd, p, 200, "text/html; charset=utf-8", leaf("article", t+"."))
	}
	w.page(nd, "/", "near-dups", "", hrefs...)
	w.nearDups = [][]string{
		{nd.origin + "/n/1.html", nd.origin + "/n/2.html", nd.origin + "/n/3.html"},
		{nd.origin + "/n/4.html", nd.origin + "/n/5.html"},
	}
	addCase("near-dups", "/n/1-3.html differ in a few words (a near-duplicate group), /n/4-5.html another group, /n/6-8.html are unrelated.",
		"All fetched; SimHash flags the groups of NearDuplicates and nothing else; precision is reported.")

	rm := hs["robots-meta"]
	w.page(rm, "/noindex.html", "noindex", "<meta name=\"robots\" content=\"noindex\">\n", "/from-noindex.html")
	w.page(rm, "/nofollow.html", "nofollow", "<meta name=\"ROBOTS\" content=\"noindex, nofollow\">\n", "/nofollow-target.html")
	xr := w.page(rm, "/x-robots.html", "x-robots-tag", "", "/x-robots-target.html")
	xr.header = [][2]string{{"X-Robots-Tag", "nofollow"}}
	rel := w.page(rm, "/rel.html", "rel nofollow", "")
	relHead, relTail := htmlPage("rel nofollow", "One link is nofollow.", "", nil)
	rel.head = append(relHead, []byte("<a rel=\"nofollow\" href=\"/rel-target.html\">no</a> <a href=\"/rel-ok.html\">yes</a>\n")...)
	rel.tail = relTail
	rel.links = []string{rm.origin + "/rel-ok.html"}
	w.finish(rel)
	w.page(rm, "/", "robots meta", "", "/noindex.html", "/nofollow.html", "/x-robots.html", "/rel.html")
	rm.dynamic = leafDynamic(rm)
	for _, p := range []string{"/nofollow-target.html", "/x-robots-target.html", "/rel-target.html"} {
		w.nofollowed = append(w.nofollowed, rm.origin+p)
	}
	addCase("robots-meta", "noindex meta (links followed), nofollow meta, X-Robots-Tag: nofollow header, rel=nofollow link.",
		"/from-noindex.html and /rel-ok.html fetched; /nofollow-target.html, /x-robots-target.html and /rel-target.html never requested (NoFollowed).")

	ms := hs["mislabelled"]
	w.raw(ms, "/image.html", 200, "text/html; charset=utf-8", pngImage(rng))
	w.page(ms, "/", "mislabelled", "", "/image.html")
	addCase("mislabelled", "/image.html is a PNG served as text/html.",
		"Sniffed as an image: stored, not parsed as HTML.")

	// robots.txt cases.
	rh := hs["robots-huge"]
	var rb bytes.Buffer
	rb.WriteString("User-agent: *\nDisallow: /early/\n")
	for rb.Len() < 520<<10 {
		rb.WriteString("# padding padding padding padding padding padding padding padding padding\n")
	}
	rb.WriteString("Disallow: /late/\n")
	w.raw(rh, "/robots.txt", 200, "text/plain", rb.Bytes())
	rh.dynamic = leafDynamic(rh)
	w.page(rh, "/", "robots huge", "", "/early/x.html", "/late/x.html")
	addCase("robots-huge", "robots.txt of 520 KiB: Disallow /early/ at the top, Disallow /late/ after 500 KiB.",
		"Only the first 500 KiB are used: /early/x.html never requested (Disallowed), /late/x.html fetched.")

	rg := hs["robots-garbage"]
	garbage := make([]byte, 4096)
	for i := range garbage {
		b := byte(rng.IntN(256))
		if b == ':' {
			b = '?'
		}
		garbage[i] = b
	}
	w.raw(rg, "/robots.txt", 200, "text/plain", garbage)
	rg.dynamic = leafDynamic(rg)
	w.page(rg, "/", "robots garbage", "", "/page.html")
	addCase("robots-garbage", "robots.txt is 4 KiB of random bytes.",
		"No rule parses, so everything is allowed: / and /page.html fetched.")

	rr := hs["robots-redirect"]
	w.redirect(rr, "/robots.txt", 301, "/robots-1.txt")
	w.redirect(rr, "/robots-1.txt", 302, "/real-robots.txt")
	w.raw(rr, "/real-robots.txt", 200, "text/plain", []byte("User-agent: *\nDisallow: /secret/\n"))
	rr.dynamic = leafDynamic(rr)
	w.page(rr, "/", "robots redirect", "", "/secret/x.html", "/open.html")
	addCase("robots-redirect", "/robots.txt redirects twice (301 then 302) to /real-robots.txt, which disallows /secret/.",
		"Redirects followed (up to 5 hops): /secret/x.html never requested, /open.html fetched.")

	rt := hs["robots-timeout"]
	w.page(rt, "/", "robots timeout", "", "/page.html")
	rt.dynamic = func(w *Web, rw http.ResponseWriter, r *http.Request) (int, bool) {
		if r.URL.Path != "/robots.txt" {
			return 0, false
		}
		t := time.NewTimer(10 * time.Minute)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-w.done:
		case <-t.C:
		}
		return 0, true
	}
	addCase("robots-timeout", "/robots.txt never answers.",
		"The robots fetch times out; the host is treated as disallowed for now (retried later): no other URL of this host is requested.")

	rf := hs["robots-rfc"]
	rfcRobots := "User-agent: *\nDisallow: /\n\nUser-agent: Petrel\nAllow: /$\nAllow: /allowed/\nDisallow: /allowed/but-not-this\nDisallow: /*.php$\nAllow: /page.php?\nDisallow: /fish*\nAllow: /fish/salmon.html\nDisallow: /a/*/c\nAllow: /tie\nDisallow: /tie\n"
	w.raw(rf, "/robots.txt", 200, "text/plain", []byte(rfcRobots))
	rf.rules = parseRobots([]byte(rfcRobots), w.product)
	rf.dynamic = leafDynamic(rf)
	rfcLinks := []string{"/allowed/x.html", "/allowed/but-not-this.html", "/index.php", "/index.php?x=1", "/page.php?q=1",
		"/fish.html", "/fish/salmon.html", "/fishing/", "/a/b/c/d.html", "/a/c.html", "/tie.html", "/other.html"}
	w.page(rf, "/", "robots rfc", "", rfcLinks...)
	for _, p := range rfcLinks {
		if !rf.rules.allowed(p) {
			w.hostileDisallowed = append(w.hostileDisallowed, rf.origin+p)
		}
	}
	w.hostileDisallowed = append(w.hostileDisallowed, rh.origin+"/early/x.html", rr.origin+"/secret/x.html")
	addCase("robots-rfc", "RFC 9309 precedence: a Petrel group (matched case-insensitively) over *, longest match, allow wins ties, * and $ wildcards.",
		"Allowed: /, /allowed/x.html, /index.php?x=1, /page.php?q=1, /fish/salmon.html, /a/c.html, /tie.html, /other.html; never requested: /allowed/but-not-this.html, /index.php, /fish.html, /fishing/, /a/b/c/d.html.")

	// Raw cases.
	rawCases := []struct{ name, desc, expect string }{
		{"reset", "Announces 1 MiB, sends 18 KB, then resets the connection (RST).", "Recorded as failed and retried up to the retry limit; the crawl goes on."},
		{"blackhole", "Reads the request and never answers (robots.txt answers 404).", "The fetch times out (header or total timeout); file descriptors released; the crawl goes on."},
		{"stall", "Sends headers and 30 bytes of a 5000-byte body, then stalls.", "The total timeout ends the fetch; recorded as failed or truncated."},
		{"big-headers", "Sends 1 MiB of response headers.", "Refused with a clear error (header size limit); memory bounded."},
		{"bad-status", "Sends an invalid status line (HTTP/1.1 2x0 Whatever).", "Recorded as a protocol error; the crawl goes on."},
		{"overlength", "Content-Length: 100 but sends 5800 bytes, then closes.", "Only the announced 100 bytes are read and stored; the connection is not reused."},
		{"chunk-cut", "Chunked body cut short (no terminating chunk) and the connection closed.", "Recorded as failed or truncated (unexpected EOF); the crawl goes on."},
	}
	for _, rc := range rawCases {
		addCase(rc.name, rc.desc, rc.expect)
	}

	// DNS cases: not served.
	for _, d := range []struct{ name, desc, expect string }{
		{"nowhere", "nowhere.hostile.test is in no hosts file and, under .test, never sent to DNS.", "Resolution fails at once; the URL is counted as a DNS failure, never fetched."},
		{"private", "private.hostile.test is listed in the hosts file at " + PrivateIP + ".", "Refused by the address guard unless --allow-private; never dialled."},
	} {
		u := "http://" + d.name + "." + HostileDomain + "/"
		w.cases = append(w.cases, Case{Name: d.name, Host: d.name + "." + HostileDomain, Description: d.desc, Expect: d.expect, URL: u})
		w.hseeds = append(w.hseeds, u)
	}
}

// leafLinks renders a small page linking to hrefs.
func leafLinks(title, text string, hrefs ...string) []byte {
	var links []link
	for _, h := range hrefs {
		links = append(links, link{href: h, text: "next"})
	}
	head, tail := htmlPage(title, text, "", links)
	return append(head, tail...)
}
