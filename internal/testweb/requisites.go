package testweb

import (
	"context"
	"encoding/base64"
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

// Requisites site: a small web whose pages use every form of page
// requisite a browser fetches (the parse package's list), for the tests of
// embeds, hop paths, the transclusion budget and replay.
//
// Three host names: www.req.test (the site, on its own address),
// cdn.req.test (its assets' CDN, off the site's host scope) and
// other.req.test (a page it links to, off scope too; the latter two share
// an address). From the seed http://www.req.test:PORT/:
//
//	/                       home page: every requisite form, links to
//	                        /page2.html and to other.req.test
//	/css/site.css           E: @import "print.css", url(../img/css-bg.png),
//	                        url(fonts/f.woff2), relative to the sheet
//	/css/print.css          EE: url(deep.png) → /css/deep.png (EEE)
//	/chain/a.css            E: a chain of five style sheets, each naming
//	                        the next in another form (@import "b.css",
//	                        @import url(c.css), @import url('d.css')
//	                        screen, @import "e.css" beside url(d.png)),
//	                        the last an image (EEEEEE) at six embed hops
//	/img/inline-js.png      E: named only in a string literal of an
//	                        inline <script>
//	/js/toggle.js           E: names /img/minus.png and /img/plus.png (EE)
//	                        only in string literals (and junk that is not
//	                        a requisite: "a b.png", a template, data.json)
//	/img/moved.png          E: 301 to /img/real.png (ER)
//	/private/secret.png     E, but disallowed by robots.txt
//	/page2.html             L: an image, the site's style sheet again, an
//	                        <object> holding /embed/inner.html (LE, an HTML
//	                        document fetched as a requisite: its link
//	                        /not-followed.html is not followed, its image
//	                        and style sheet are, LEE, and that sheet's
//	                        image is LEEE), an iframe /frame.html (LL)
//	cdn.req.test/lib.js     E (off scope), cdn.css E, its font EE
//
// [RequisitesWeb.Expected] gives every URL a crawler fetches, with its hop
// path, for a given --max-embed-hops, --max-css-hops and
// --embeds-off-scope, and [RequisitesWeb.Cut] those a crawler finds but
// does not follow because of the embed hop limits;
// [RequisitesWeb.Pages] the HTML pages and their titles (for a replay
// test, whose archive should show each with all its requisites).
// Every response has Content-Length and a Content-Type; bodies are tiny
// but of the right kind (a real PNG, GIF, CSS, JavaScript).

// RequisitePage is an HTML page of the requisites site.
type RequisitePage struct {
	URL   string
	Title string
}

// RequisitesWeb is a running requisites site. Its methods are safe for
// concurrent use.
type RequisitesWeb struct {
	www, cdn string // origins
	other    string
	hosts    []hostsLine
	res      map[string]reqResource // by URL
	log      hitLog
	lns      []net.Listener
	srvs     []*http.Server
	wg       sync.WaitGroup
	once     sync.Once
}

// reqResource is one URL of the site.
type reqResource struct {
	status   int
	ctype    string
	body     []byte
	location string // redirect target
	hops     string // hop path from the seed ("" for the seed)
	page     string // title, for HTML pages reached by links or as the seed
	never    bool   // a correct crawler never fetches it (robots.txt, off scope, link of an embed)
	via      string // the document that names it (a redirect: the redirecting URL), when it is not a page reached by links
}

// StartRequisites serves the requisites site on firstIP (www.req.test)
// and the address after it (cdn.req.test and other.req.test), each on an
// ephemeral port, until ctx is done or Close is called.
func StartRequisites(ctx context.Context, firstIP netip.Addr) (*RequisitesWeb, error) {
	if !firstIP.IsLoopback() {
		return nil, fmt.Errorf("testweb: requisites: %v is not a loopback address", firstIP)
	}
	w := &RequisitesWeb{res: map[string]reqResource{}}
	w.log.max = 100_000
	second := firstIP.Next()
	lnW, err := net.Listen("tcp", netip.AddrPortFrom(firstIP, 0).String())
	if err != nil {
		return nil, fmt.Errorf("testweb: requisites: %w", err)
	}
	lnC, err := net.Listen("tcp", netip.AddrPortFrom(second, 0).String())
	if err != nil {
		lnW.Close()
		return nil, fmt.Errorf("testweb: requisites: %w", err)
	}
	w.lns = []net.Listener{lnW, lnC}
	w.www = origin("www.req.test", lnW.Addr().(*net.TCPAddr).Port)
	w.cdn = origin("cdn.req.test", lnC.Addr().(*net.TCPAddr).Port)
	w.other = origin("other.req.test", lnC.Addr().(*net.TCPAddr).Port)
	w.hosts = []hostsLine{{firstIP.String(), "www.req.test"}, {second.String(), "cdn.req.test"}, {second.String(), "other.req.test"}}
	w.build()
	w.serve(lnW, firstIP)
	w.serve(lnC, second)
	go func() {
		<-ctx.Done()
		w.Close()
	}()
	return w, nil
}

// A 1×1 PNG and GIF: the images are real images.
var (
	tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	tinyGIF, _ = base64.StdEncoding.DecodeString("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")
)

// build lays out every resource of the site.
func (w *RequisitesWeb) build() {
	www, cdn := w.www, w.cdn
	add := func(url, hops, ctype string, body []byte) {
		w.res[url] = reqResource{status: 200, ctype: ctype, body: body, hops: hops, via: www + "/"}
	}
	page := func(url, hops, title, body string) {
		w.res[url] = reqResource{status: 200, ctype: "text/html; charset=utf-8", hops: hops, page: title,
			body: []byte("<!DOCTYPE html><html><head><meta charset=utf-8><title>" + title + "</title>" + body + "</html>\n")}
	}
	img := func(url, hops string) { add(url, hops, "image/png", tinyPNG) }
	css := func(url, hops, body string) { add(url, hops, "text/css; charset=utf-8", []byte(body)) }
	js := func(url, hops string) {
		add(url, hops, "text/javascript", []byte("console.log(\"script loaded: \" + document.currentScript.src);\n"))
	}

	w.res[www+"/robots.txt"] = reqResource{status: 200, ctype: "text/plain", body: []byte("User-agent: *\nDisallow: /private/\n"), never: true}
	w.res[cdn+"/robots.txt"] = reqResource{status: 200, ctype: "text/plain", body: []byte("User-agent: *\nAllow: /\n"), never: true}
	page(www+"/", "", "Requisites: home", `
<link rel=stylesheet href=/css/site.css><link rel=icon href=/favicon.ico><link rel=apple-touch-icon href=/touch-icon.png>
<link rel=preload href=/fonts/pre.woff2 as=font crossorigin><link rel=modulepreload href=/js/mod.js>
<link rel=manifest href=/app.webmanifest><link rel=canonical href=/><link rel=stylesheet href=`+cdn+`/cdn.css>
<script src=/js/app.js></script><script src=`+cdn+`/lib.js></script><script src=/js/toggle.js></script>
<script>var spinner = "img/inline-js.png";</script>
<style>@import "/css/imported.css"; .hero { background: url(img/hero.png) }</style></head>
<body background=/img/body-bg.gif><h1 class=hero>Every requisite</h1>
<img src=/img/a.png srcset="/img/a-2x.png 2x, /img/a-3x.png 3x" alt=a>
<picture><source srcset="/img/p.webp 1x" type=image/webp><img src=/img/p.png alt=p></picture>
<video src=/media/v.mp4 poster=/img/poster.png><source src=/media/v.webm><track src=/media/sub.vtt></video>
<audio src=/media/a.mp3></audio><object data=/embed/obj.svg></object><embed src=/embed/e.swf>
<form><input type=image src=/img/button.png alt=go></form>
<div style="background-image: url('/img/div-bg.png')">styled</div>
<img data-src=/img/lazy.png data-srcset="/img/lazy-2x.png 2x" alt=lazy>
<img src=/img/moved.png alt=moved><img src=/private/secret.png alt=secret>
<img src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" alt=inline>
<p><a href=/page2.html>second page</a> <a href=`+w.other+`/>elsewhere</a></p>
<link rel=stylesheet href=/chain/a.css></body>`)
	css(www+"/css/site.css", "E", `@import "print.css";
body { background: url(../img/css-bg.png) }
@font-face { font-family: f; src: url(fonts/f.woff2) format("woff2") }
`)
	css(www+"/css/print.css", "EE", ".x { background: url(deep.png) }\n")
	img(www+"/css/deep.png", "EEE")
	img(www+"/img/css-bg.png", "EE")
	add(www+"/css/fonts/f.woff2", "EE", "font/woff2", []byte("wOF2 font"))
	css(www+"/css/imported.css", "E", ".y { background: url(/img/imported-bg.png) }\n")
	img(www+"/img/imported-bg.png", "EE")
	css(www+"/chain/a.css", "E", "@import \"b.css\";\n.a { color: red }\n")
	css(www+"/chain/b.css", "EE", "@import url(c.css);\n")
	css(www+"/chain/c.css", "EEE", "@import url('d.css') screen;\n")
	css(www+"/chain/d.css", "EEEE", "@import \"e.css\";\n.d { background: url(d.png) }\n")
	img(www+"/chain/d.png", "EEEEE")
	css(www+"/chain/e.css", "EEEEE", ".e { background: url(../img/chain-e.png) }\n")
	img(www+"/img/chain-e.png", "EEEEEE")
	w.setVia(www, map[string]string{"/css/print.css": "/css/site.css", "/css/deep.png": "/css/print.css",
		"/img/css-bg.png": "/css/site.css", "/css/fonts/f.woff2": "/css/site.css", "/img/imported-bg.png": "/css/imported.css",
		"/chain/b.css": "/chain/a.css", "/chain/c.css": "/chain/b.css", "/chain/d.css": "/chain/c.css",
		"/chain/d.png": "/chain/d.css", "/chain/e.css": "/chain/d.css", "/img/chain-e.png": "/chain/e.css"})
	img(www+"/img/hero.png", "E")
	add(www+"/favicon.ico", "E", "image/x-icon", tinyPNG)
	for _, p := range []string{"/touch-icon.png", "/img/inline-js.png", "/img/a.png", "/img/a-2x.png", "/img/a-3x.png", "/img/p.png",
		"/img/poster.png", "/img/button.png", "/img/div-bg.png", "/img/lazy.png", "/img/lazy-2x.png"} {
		img(www+p, "E")
	}
	add(www+"/fonts/pre.woff2", "E", "font/woff2", []byte("wOF2 font"))
	js(www+"/js/mod.js", "E")
	js(www+"/js/app.js", "E")
	add(www+"/js/toggle.js", "E", "text/javascript; charset=utf-8", []byte(`// swaps a toggler's image, named only in string literals
function toggle(el, open) {
  el.src = open ? "../img/minus.png" : '../img/plus.png';
  el.alt = "a b.png"; el.dataset.big = `+"`${base}/big.png`"+`; fetch("data.json");
}
`))
	add(www+"/app.webmanifest", "E", "application/manifest+json", []byte(`{"name":"requisites"}`))
	add(www+"/img/body-bg.gif", "E", "image/gif", tinyGIF)
	add(www+"/img/p.webp", "E", "image/webp", []byte("RIFF\x00\x00\x00\x00WEBP"))
	add(www+"/media/v.mp4", "E", "video/mp4", []byte("\x00\x00\x00\x18ftypmp42"))
	add(www+"/media/v.webm", "E", "video/webm", []byte("\x1aE\xdf\xa3"))
	add(www+"/media/sub.vtt", "E", "text/vtt", []byte("WEBVTT\n"))
	add(www+"/media/a.mp3", "E", "audio/mpeg", []byte("ID3"))
	add(www+"/embed/obj.svg", "E", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>`))
	add(www+"/embed/e.swf", "E", "application/x-shockwave-flash", []byte("FWS"))
	w.res[www+"/img/moved.png"] = reqResource{status: 301, location: "/img/real.png", hops: "E", via: www + "/"}
	w.res[www+"/img/real.png"] = reqResource{status: 200, ctype: "image/png", body: tinyPNG, hops: "ER", via: www + "/img/moved.png"}
	w.res[www+"/private/secret.png"] = reqResource{status: 200, ctype: "image/png", body: tinyPNG, never: true}
	js(cdn+"/lib.js", "E")
	css(cdn+"/cdn.css", "E", "@font-face { font-family: c; src: url(cdn-font.woff2) }\n")
	w.res[cdn+"/cdn-font.woff2"] = reqResource{status: 200, ctype: "font/woff2", body: []byte("wOF2 font"), hops: "EE", via: cdn + "/cdn.css"}
	w.res[w.other+"/"] = reqResource{status: 200, ctype: "text/html", body: []byte("<title>off scope</title>"), never: true}

	page(www+"/page2.html", "L", "Requisites: second page", `<link rel=stylesheet href=/css/site.css></head>
<body><p>Second page <img src=/img/page2.png alt=two></p>
<object data=/embed/inner.html type=text/html></object><iframe src=/frame.html></iframe></body>`)
	img(www+"/img/page2.png", "LE")
	w.res[www+"/embed/inner.html"] = reqResource{status: 200, ctype: "text/html; charset=utf-8", hops: "LE", via: www + "/page2.html",
		body: []byte(`<!DOCTYPE html><html><head><title>inner</title><link rel=stylesheet href=/css/inner.css></head>` +
			`<body><img src=/img/inner.png alt=inner><a href=/not-followed.html>not followed</a></body></html>`)}
	css(www+"/css/inner.css", "LEE", "p { background: url(/img/inner-css.png) }\n")
	img(www+"/img/inner-css.png", "LEEE")
	img(www+"/img/inner.png", "LEE")
	w.res[www+"/not-followed.html"] = reqResource{status: 200, ctype: "text/html", body: []byte("<title>no</title>"), never: true}
	page(www+"/frame.html", "LL", "Requisites: frame", `</head><body><img src=/img/frame.png alt=frame></body>`)
	img(www+"/img/frame.png", "LLE")
	img(www+"/img/minus.png", "EE")
	img(www+"/img/plus.png", "EE")
	w.setVia(www, map[string]string{"/img/page2.png": "/page2.html", "/css/inner.css": "/embed/inner.html",
		"/img/inner-css.png": "/css/inner.css", "/img/minus.png": "/js/toggle.js", "/img/plus.png": "/js/toggle.js", "/img/inner.png": "/embed/inner.html", "/img/frame.png": "/frame.html"})
}

// setVia sets the document naming each resource of origin o: via by
// path (the others named by the home page are set by build).
func (w *RequisitesWeb) setVia(o string, via map[string]string) {
	for p, v := range via {
		r := w.res[o+p]
		r.via = o + v
		w.res[o+p] = r
	}
}

// serve answers the site's requests on ln.
func (w *RequisitesWeb) serve(ln net.Listener, ip netip.Addr) {
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnContext: stampContext, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		name := hostOnly(r.Host)
		o := w.www
		switch name {
		case "cdn.req.test":
			o = w.cdn
		case "other.req.test":
			o = w.other
		}
		res, ok := w.res[o+r.URL.RequestURI()]
		status := http.StatusNotFound
		switch {
		case !ok || name != "www.req.test" && name != "cdn.req.test" && name != "other.req.test":
			writeBody(rw, status, "text/plain", []byte("not found\n"))
		case res.location != "":
			status = res.status
			rw.Header().Set("Location", res.location)
			writeBody(rw, status, "text/plain", []byte("moved\n"))
		default:
			status = res.status
			writeBody(rw, status, res.ctype, res.body)
		}
		h := Hit{Host: name, IP: ip, Path: r.URL.RequestURI(), Status: status, UserAgent: r.UserAgent(), Proto: r.Proto, Start: start}
		endHTTP(&h, rw, r)
		w.log.record(h)
	})}
	w.srvs = append(w.srvs, srv)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		srv.Serve(stampListener{ln}) // ends with Close (ErrServerClosed)
	}()
}

// Seeds returns the seed URL, the home page.
func (w *RequisitesWeb) Seeds() []string { return []string{w.www + "/"} }

// Origins returns the origins of the site and of its CDN.
func (w *RequisitesWeb) Origins() (site, cdn string) { return w.www, w.cdn }

// Expected returns every URL a correct crawler fetches from the seed with
// scope "host", politeness and robots.txt obeyed, and the given
// --max-embed-hops, --max-css-hops and --embeds-off-scope, each with its
// hop path ("" for the seed; robots.txt excluded).
func (w *RequisitesWeb) Expected(maxEmbedHops, maxCSSHops int, embedsOffScope bool) map[string]string {
	out := map[string]string{}
	for u, r := range w.res {
		if w.fetched(u, maxEmbedHops, maxCSSHops, embedsOffScope) {
			out[u] = r.hops
		}
	}
	return out
}

// Cut returns the URLs a correct crawler finds in the documents it
// fetches but does not follow because those documents are at their embed
// hop limit (--max-embed-hops for HTML, --max-css-hops for a style sheet),
// with the document that names each.
func (w *RequisitesWeb) Cut(maxEmbedHops, maxCSSHops int, embedsOffScope bool) map[string]string {
	out := map[string]string{}
	for u, r := range w.res {
		if r.via == "" || strings.HasSuffix(r.hops, "R") || maxEmbedHops == 0 ||
			w.fetched(u, maxEmbedHops, maxCSSHops, embedsOffScope) || !w.fetched(u, 1<<10, 1<<10, embedsOffScope) {
			continue // fetched, or not for another reason than the limits
		}
		if w.fetched(r.via, maxEmbedHops, maxCSSHops, embedsOffScope) {
			out[u] = r.via
		}
	}
	return out
}

// fetched reports whether a correct crawler fetches u: a page reached by
// links always; a requisite when the document naming it is fetched and
// within its limit, a redirect's target when the redirect is fetched.
func (w *RequisitesWeb) fetched(u string, maxEmbedHops, maxCSSHops int, embedsOffScope bool) bool {
	r := w.res[u]
	switch {
	case r.never, strings.HasPrefix(u, w.cdn+"/") && !embedsOffScope:
		return false
	case r.via == "":
		return trailingEmbeds(r.hops) == 0
	case maxEmbedHops == 0:
		return false
	case strings.HasSuffix(r.hops, "R"):
		return w.fetched(r.via, maxEmbedHops, maxCSSHops, embedsOffScope)
	}
	limit := maxEmbedHops
	if strings.HasPrefix(w.res[r.via].ctype, "text/css") {
		limit = max(maxEmbedHops, maxCSSHops)
	}
	return trailingEmbeds(r.hops) <= limit && w.fetched(r.via, maxEmbedHops, maxCSSHops, embedsOffScope)
}

// trailingEmbeds is the number of E hops after the last L hop of a path.
func trailingEmbeds(hops string) int {
	if i := strings.LastIndexByte(hops, 'L'); i >= 0 {
		hops = hops[i+1:]
	}
	return strings.Count(hops, "E")
}

// Pages returns the HTML pages a crawl of the site archives as pages (the
// seed and the pages reached by links), sorted by URL, with their titles.
func (w *RequisitesWeb) Pages() []RequisitePage {
	var out []RequisitePage
	for u, r := range w.res {
		if r.page != "" {
			out = append(out, RequisitePage{URL: u, Title: r.page})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}

// Hits returns a copy of the request log in arrival order, robots.txt
// requests included.
func (w *RequisitesWeb) Hits() []Hit { return w.log.all() }

// HostsFile returns the hosts file of the site ("IP name" lines).
func (w *RequisitesWeb) HostsFile() []byte {
	var b strings.Builder
	for _, l := range w.hosts {
		b.WriteString(l.ip + " " + l.name + "\n")
	}
	return []byte(b.String())
}

// WriteFiles writes the hosts file and the seeds file into dir and returns
// their paths.
func (w *RequisitesWeb) WriteFiles(dir string) (hostsPath, seedsPath string, err error) {
	hostsPath, seedsPath = filepath.Join(dir, "hosts"), filepath.Join(dir, "seeds.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	if err := os.WriteFile(hostsPath, w.HostsFile(), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	if err := os.WriteFile(seedsPath, []byte(strings.Join(w.Seeds(), "\n")+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("testweb: write files: %w", err)
	}
	return hostsPath, seedsPath, nil
}

// Close stops the servers and waits for them. It is safe to call more
// than once.
func (w *RequisitesWeb) Close() error {
	w.once.Do(func() {
		for _, s := range w.srvs {
			s.Close()
		}
		for _, ln := range w.lns {
			ln.Close()
		}
		w.wg.Wait()
	})
	return nil
}

// String describes the site in one line.
func (w *RequisitesWeb) String() string {
	return "requisites site " + w.www + " (" + strconv.Itoa(len(w.res)) + " URLs, CDN " + w.cdn + ")"
}
