package testweb

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// site is one served host name.
type site struct {
	name   string
	ip     netip.Addr
	port   int
	index  int
	origin string

	robots  []byte       // robots.txt body; nil means 404
	rules   *robotsRules // rules for the product token; nil allows all
	res     map[string]*resource
	dynamic func(w *Web, rw http.ResponseWriter, r *http.Request) (status int, handled bool)
}

// resource is a pre-generated response. Its body is head, then the pool
// paragraphs listed in filler, then tail.
type resource struct {
	status   int
	ctype    string
	header   [][2]string
	head     []byte
	filler   []uint16
	tail     []byte
	length   int
	location string   // normalised redirect target, if any
	links    []string // normalised URLs a crawler discovers in the body
}

// notFound is the body of every 404 of the normal web.
var notFoundBody = []byte("<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>Not found</h1><p>There is nothing here.</p></body></html>\n")

// serve answers r, received at now, from s and returns the status sent
// and, for a page of the changing web, the version served.
func (s *site) serve(w *Web, rw http.ResponseWriter, r *http.Request, now time.Time) (int, uint32) {
	p := r.URL.RequestURI()
	if p == "/robots.txt" {
		if res := s.res[p]; res != nil {
			w.writeResource(rw, res)
			return res.status, 0
		}
		if s.dynamic != nil {
			if st, ok := s.dynamic(w, rw, r); ok {
				return st, 0
			}
		}
		if s.robots == nil {
			writeBody(rw, http.StatusNotFound, "text/html; charset=utf-8", notFoundBody)
			return http.StatusNotFound, 0
		}
		writeBody(rw, http.StatusOK, "text/plain; charset=utf-8", s.robots)
		return http.StatusOK, 0
	}
	res := s.res[p]
	if res == nil && s.dynamic != nil {
		if st, ok := s.dynamic(w, rw, r); ok {
			return st, 0
		}
	}
	if res == nil {
		writeBody(rw, http.StatusNotFound, "text/html; charset=utf-8", notFoundBody)
		return http.StatusNotFound, 0
	}
	if w.changing(res) {
		return w.serveChanging(rw, r, s, p, res, now)
	}
	w.writeResource(rw, res)
	return res.status, 0
}

// writeResource writes res with its headers and Content-Length.
func (w *Web) writeResource(rw http.ResponseWriter, res *resource) {
	hd := rw.Header()
	if res.ctype != "" {
		hd.Set("Content-Type", res.ctype)
	}
	for _, kv := range res.header {
		hd.Add(kv[0], kv[1])
	}
	if res.location != "" && hd.Get("Location") == "" {
		hd.Set("Location", res.location)
	}
	hd.Set("Content-Length", strconv.Itoa(res.length))
	rw.WriteHeader(res.status)
	if len(res.head) > 0 {
		rw.Write(res.head)
	}
	for _, i := range res.filler {
		rw.Write(w.pool[i])
	}
	if len(res.tail) > 0 {
		rw.Write(res.tail)
	}
}

// body returns the full body of res (used by tests and duplicates).
func (w *Web) body(res *resource) []byte {
	b := make([]byte, 0, res.length)
	b = append(b, res.head...)
	for _, i := range res.filler {
		b = append(b, w.pool[i]...)
	}
	return append(b, res.tail...)
}

// finish computes res.length.
func (w *Web) finish(res *resource) *resource {
	n := len(res.head) + len(res.tail)
	for _, i := range res.filler {
		n += len(w.pool[i])
	}
	res.length = n
	return res
}

var syllables = strings.Fields("ka lo mi ne ru sa ti vo pe da gu fi ho ja le mo nu ri se ta vi wa ze bo ce du ga hi jo ku la me no pa qui re so tu ve xo ya zu bra cle dri fro glu pri stra tho")

// word returns a pseudo-word drawn from rng.
func word(rng *rand.Rand) string {
	n := 1 + rng.IntN(3)
	var b strings.Builder
	for range n {
		b.WriteString(syllables[rng.IntN(len(syllables))])
	}
	return b.String()
}

// sentence returns n words drawn from rng.
func sentence(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = word(rng)
	}
	return strings.Join(ws, " ")
}

const poolSize = 4096

// makePool generates the shared filler paragraphs.
func (w *Web) makePool() {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 0x9e3779b97f4a7c15))
	w.pool = make([][]byte, poolSize)
	for i := range w.pool {
		w.pool[i] = []byte("<p>" + sentence(rng, 15+rng.IntN(20)) + ".</p>\n")
	}
}

// pickFiller returns pool indices adding about n bytes.
func (w *Web) pickFiller(rng *rand.Rand, n int) []uint16 {
	var out []uint16
	for n > 0 {
		i := uint16(rng.IntN(poolSize))
		out = append(out, i)
		n -= len(w.pool[i])
	}
	return out
}

// link is one anchor: the href as written and its resolved, normalised URL.
type link struct {
	href, text string
	target     string
}

// normalize returns the normalised form of an absolute http URL: lower-case
// scheme and host, default port omitted, fragment removed.
func normalize(u *url.URL) string {
	v := *u
	v.Fragment = ""
	v.RawFragment = ""
	v.Scheme = strings.ToLower(v.Scheme)
	host := strings.ToLower(v.Hostname())
	port := v.Port()
	if port == "" || (v.Scheme == "http" && port == "80") || (v.Scheme == "https" && port == "443") {
		v.Host = host
	} else {
		v.Host = host + ":" + port
	}
	if v.Path == "" {
		v.Path = "/"
	}
	return v.String()
}

// resolve resolves href against base and normalises it.
func resolve(base, href string) string {
	b, err := url.Parse(base)
	if err != nil {
		panic(fmt.Sprintf("testweb: bad base %q: %v", base, err))
	}
	r, err := url.Parse(href)
	if err != nil {
		panic(fmt.Sprintf("testweb: bad href %q: %v", href, err))
	}
	return normalize(b.ResolveReference(r))
}

// htmlPage renders a page; returns head (everything before filler) and tail.
func htmlPage(title, intro string, extraHead string, links []link) (head, tail []byte) {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title>\n")
	b.WriteString(extraHead)
	b.WriteString("</head>\n<body>\n<h1>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</h1>\n<p>")
	b.WriteString(intro)
	b.WriteString("</p>\n<ul>\n")
	for _, l := range links {
		b.WriteString("<li><a href=\"")
		b.WriteString(html.EscapeString(l.href))
		b.WriteString("\">")
		b.WriteString(html.EscapeString(l.text))
		b.WriteString("</a></li>\n")
	}
	b.WriteString("</ul>\n")
	return b.Bytes(), []byte("<footer>Petrel synthetic web</footer>\n</body></html>\n")
}

// robots variants of the normal web.
const (
	robotsStandard = iota // * group: Disallow /private/, Allow /private/open.html
	robotsMissing         // 404
	robotsSpecific        // * disallows all; a petrel group allows most
	robotsOpen            // empty Disallow
)

// generateNormal builds the content of every normal site.
func (w *Web) generateNormal() {
	w.makePool()
	n := len(w.sites)
	for j, s := range w.sites {
		rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(j)+1))
		s.res = make(map[string]*resource)
		// robots.txt
		v := robotsStandard
		switch x := rng.IntN(100); {
		case x < 15:
			v = robotsMissing
		case x < 30:
			v = robotsSpecific
		case x < 40:
			v = robotsOpen
		}
		if j == 0 {
			v = robotsStandard
		}
		switch v {
		case robotsStandard:
			txt := "# robots.txt of " + s.name + "\nUser-agent: *\nDisallow: /private/\nAllow: /private/open.html\n"
			if w.cfg.CrawlDelay > 0 && j%10 == 1 {
				txt += "Crawl-delay: " + strconv.FormatFloat(w.cfg.CrawlDelay.Seconds(), 'f', -1, 64) + "\n"
			}
			s.robots = []byte(txt + "\nSitemap: " + s.origin + "/sitemap.xml\n")
		case robotsSpecific:
			s.robots = []byte("User-agent: *\nDisallow: /\n\nUser-agent: otherbot\nUser-agent: PETREL\nAllow: /\nDisallow: /private/\nDisallow: /*?sort=\nAllow: /private/open.html\n")
		case robotsOpen:
			s.robots = []byte("User-agent: *\nDisallow:\n")
		}
		if s.robots != nil {
			s.rules = parseRobots(s.robots, w.product)
		}

		P := w.cfg.PagesPerHost
		dupOf := 1 + rng.IntN(P-1) // /copy/dupOf.html duplicates /p/dupOf.html
		sortOf := 1 + rng.IntN(P-1)
		other := func() *site { return w.sites[rng.IntN(n)] }
		pagePath := func(k int) string {
			if k == 0 {
				return "/"
			}
			return "/p/" + strconv.Itoa(k) + ".html"
		}
		// Redirect targets.
		tgt := other()
		r1 := resolve(tgt.origin, pagePath(rng.IntN(P)))
		r2 := s.origin + "/landing.html"

		for k := 0; k < P; k++ {
			base := s.origin + pagePath(k)
			noRel := k == dupOf
			var links []link
			add := func(href string) {
				links = append(links, link{href: href, text: sentence(rng, 2), target: resolve(base, href)})
			}
			rel := func(m int) string {
				if noRel {
					return pagePath(m)
				}
				if k == 0 {
					if m == 0 {
						return "./"
					}
					return "p/" + strconv.Itoa(m) + ".html"
				}
				if m == 0 {
					return "../"
				}
				switch rng.IntN(3) {
				case 0:
					return strconv.Itoa(m) + ".html"
				case 1:
					return "./" + strconv.Itoa(m) + ".html"
				}
				return "../p/" + strconv.Itoa(m) + ".html"
			}
			// Structure that makes everything reachable.
			if k+1 < P {
				add(rel(k + 1))
			}
			if k == 0 {
				add("/today.html")
				add("/today-print.html")
				add("/img/logo.png")
				add("/files/notes.txt")
				add("/private/open.html")
				add("/r/1")
				add("/r/2")
				add("/copy/" + strconv.Itoa(dupOf) + ".html")
				if j%4 == 0 {
					for i := j + 1; i < j+4 && i < n; i++ {
						add(w.sites[i].origin + "/")
					}
				}
			}
			if k == 1 || k == P-1 {
				add("/private/" + strconv.Itoa(1+rng.IntN(3)) + ".html")
				add("/missing/" + strconv.Itoa(k) + ".html")
				add("/p/" + strconv.Itoa(sortOf) + ".html?sort=asc")
			}
			for len(links) < w.cfg.LinksPerPage+boolInt(k == 0)*9 {
				m := rng.IntN(P)
				switch x := rng.IntN(100); {
				case x < 35:
					add(rel(m))
				case x < 45:
					add(pagePath(m) + "#s" + strconv.Itoa(rng.IntN(5)))
				case x < 50:
					add("/private/" + strconv.Itoa(1+rng.IntN(3)) + ".html")
				case x < 53:
					add("/missing/" + strconv.Itoa(rng.IntN(50)) + ".html")
				case x < 65:
					add(s.origin + pagePath(m))
				case x < 70:
					o := other()
					add("http://" + strings.ToUpper(o.name) + strings.TrimPrefix(o.origin, "http://"+o.name) + pagePath(m))
				case x < 75:
					add(other().origin + "/r/" + strconv.Itoa(1+rng.IntN(2)))
				default:
					add(other().origin + pagePath(m))
				}
			}
			title := fmt.Sprintf("%s page %d: %s", s.name, k, sentence(rng, 3))
			head, tail := htmlPage(title, sentence(rng, 14)+".", "", links)
			res := &resource{status: 200, ctype: "text/html; charset=utf-8", head: head, tail: tail}
			res.filler = w.pickFiller(rng, w.cfg.PageBytes-len(head)-len(tail))
			for _, l := range links {
				res.links = append(res.links, l.target)
			}
			w.finish(res)
			s.res[pagePath(k)] = res
			if k == dupOf {
				s.res["/copy/"+strconv.Itoa(k)+".html"] = res
			}
			if k == sortOf {
				s.res[pagePath(k)+"?sort=asc"] = res
			}
		}
		// Private pages, the landing page reached only by redirect.
		small := func(title string) *resource {
			l := []link{{href: "/", text: "home", target: s.origin + "/"}}
			head, tail := htmlPage(title, sentence(rng, 12)+".", "", l)
			return w.finish(&resource{status: 200, ctype: "text/html; charset=utf-8", head: head, tail: tail, links: []string{s.origin + "/"}})
		}
		for k := 1; k <= 3; k++ {
			s.res["/private/"+strconv.Itoa(k)+".html"] = small(fmt.Sprintf("%s private %d", s.name, k))
		}
		s.res["/private/open.html"] = small(s.name + " open exception")
		s.res["/landing.html"] = small(s.name + " landing")
		// Redirects.
		s.res["/r/1"] = w.finish(&resource{status: http.StatusMovedPermanently, location: r1})
		s.res["/r/2"] = w.finish(&resource{status: http.StatusFound, location: r2})
		// Near-duplicates: identical but for a date and a counter.
		intro := sentence(rng, 14)
		nl := []link{{href: "/", text: "home"}, {href: "/p/1.html", text: "first"}, {href: s.origin + "/files/notes.txt", text: "notes"}}
		for i := range nl {
			nl[i].target = resolve(s.origin+"/today.html", nl[i].href)
		}
		fill := w.pickFiller(rng, w.cfg.PageBytes-600)
		for i, p := range []string{"/today.html", "/today-print.html"} {
			title := s.name + " today"
			head, tail := htmlPage(title, fmt.Sprintf("%s. Updated 2026-11-%02d, visitor %d.", intro, 29+i, 1000+rng.IntN(9000)), "", nl)
			res := &resource{status: 200, ctype: "text/html; charset=utf-8", head: head, tail: tail, filler: fill}
			for _, l := range nl {
				res.links = append(res.links, l.target)
			}
			s.res[p] = w.finish(res)
		}
		// Non-HTML resources.
		s.res["/img/logo.png"] = w.finish(&resource{status: 200, ctype: "image/png", head: pngImage(rng)})
		s.res["/files/notes.txt"] = w.finish(&resource{status: 200, ctype: "text/plain; charset=utf-8",
			head: []byte("Notes of " + s.name + "\n" + sentence(rng, 60) + "\nhttp://" + s.name + "/not-a-link.html\n")})
		if j%4 == 0 {
			w.seeds = append(w.seeds, s.origin+"/")
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pngImage returns a small deterministic PNG.
func pngImage(rng *rand.Rand) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	c := color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
	for y := range 16 {
		for x := range 16 {
			if (x+y)%3 == 0 {
				img.Set(x, y, c)
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // cannot fail on a bytes.Buffer
	}
	return b.Bytes()
}

// lookup returns the site and path+query of a normalised URL.
func (w *Web) lookup(u string) (*site, string) {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		return nil, ""
	}
	auth, p := rest, "/"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		auth, p = rest[:i], rest[i:]
	}
	name, port := auth, 80
	if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		name = auth[:i]
		var err error
		if port, err = strconv.Atoi(auth[i+1:]); err != nil {
			return nil, ""
		}
	}
	s := w.byName[name]
	if s == nil || s.port != port {
		return nil, ""
	}
	return s, p
}

// computeExpected walks the normal web from its seeds as a crawler does.
func (w *Web) computeExpected() {
	expected := map[string]bool{}
	disallowed := map[string]bool{}
	seen := map[string]bool{}
	queue := append([]string(nil), w.seeds...)
	for _, q := range queue {
		seen[q] = true
	}
	push := func(u string) {
		if !seen[u] {
			seen[u] = true
			queue = append(queue, u)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		s, p := w.lookup(u)
		if s == nil {
			continue
		}
		if !s.rules.allowed(p) {
			disallowed[u] = true
			continue
		}
		expected[u] = true
		res := s.res[p]
		if res == nil {
			continue
		}
		if res.location != "" {
			push(res.location)
		}
		for _, l := range res.links {
			push(l)
		}
	}
	w.expect = sortedKeys(expected)
	for _, u := range w.hostileDisallowed {
		disallowed[u] = true
	}
	w.disallw = sortedKeys(disallowed)
}
