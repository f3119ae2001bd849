package parse

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func mustURL(t testing.TB, s string) urlx.URL {
	t.Helper()
	u, err := urlx.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func linkStrings(ls []urlx.URL) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

func TestHTMLLinks(t *testing.T) {
	sjis, err := japanese.ShiftJIS.NewEncoder().String(`<html><head><meta charset="shift_jis"></head><body><a href="/日本語/ページ.html">日本</a></body></html>`)
	if err != nil {
		t.Fatal(err)
	}
	cp1252, err := charmap.Windows1252.NewEncoder().String(`<p>Café – <a href="/café/€.html">x</a></p>`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		ct       string
		body     string
		want     []string
		charset  string
		nofollow bool
		noindex  bool
		bad      int
		nfLinks  int
	}{
		{
			name: "relative and absolute",
			body: `<a href="b.html">b</a><a href="/root">r</a><a href="../up">u</a><a href="https://Other.Example.org:443/x#f">o</a><a href="?q=1">q</a><a href="//cdn.example.net/y">c</a>`,
			want: []string{"http://www.example.com/dir/b.html", "http://www.example.com/root", "http://www.example.com/up", "https://other.example.org/x", "http://www.example.com/dir/page.html?q=1", "http://cdn.example.net/y"},
		},
		{
			name: "dedup and fragment",
			body: `<a href="/a">1</a><a href="/a#x">2</a><a href="http://www.example.com/a">3</a><a href="/b">4</a>`,
			want: []string{"http://www.example.com/a", "http://www.example.com/b"},
		},
		{
			name: "area frame iframe, not link img script",
			body: `<map><area href="/area"></map><frameset><frame src="/frame"></frameset><iframe src="/iframe"></iframe><link href="/style.css" rel=stylesheet><img src="/img.png"><script src="/s.js"></script>`,
			want: []string{"http://www.example.com/area", "http://www.example.com/frame", "http://www.example.com/iframe"},
		},
		{
			name: "base href to another host",
			body: `<a href="before">0</a><base href="https://other.example.org/base/"><base href="http://ignored.example/"><a href="after">1</a><a href="/abs">2</a>`,
			want: []string{"http://www.example.com/dir/before", "https://other.example.org/base/after", "https://other.example.org/abs"},
		},
		{
			name: "meta refresh",
			body: `<meta http-equiv="Refresh" content="0; URL='/next?a=1'"><meta http-equiv=refresh content="5,other.html"><meta http-equiv=refresh content="10">`,
			want: []string{"http://www.example.com/next?a=1", "http://www.example.com/dir/other.html"},
		},
		{
			name:    "rel nofollow",
			body:    `<a href="/yes">y</a><a rel="external NoFollow" href="/no">n</a>`,
			want:    []string{"http://www.example.com/yes"},
			nfLinks: 1,
		},
		{
			name: "bad schemes",
			body: `<a href="javascript:void(0)">j</a><a href="mailto:a@example.com">m</a><a href="data:text/html,x">d</a><a href="tel:+1">t</a><a href="http://[bad/">b</a><a href="ftp://example.com/">f</a><a href="/ok">ok</a><a>no href</a>`,
			want: []string{"http://www.example.com/ok"},
			bad:  6,
		},
		{
			name: "entity-encoded hrefs",
			body: `<a href="/p?a=1&amp;b=2">1</a><a href="/p?c=3&d=4">2</a><a href="&#x2F;q&#47;r">3</a><a href="/caf&eacute;">4</a>`,
			want: []string{"http://www.example.com/p?a=1&b=2", "http://www.example.com/p?c=3&d=4", "http://www.example.com/q/r", "http://www.example.com/caf%C3%A9"},
		},
		{
			name:     "meta robots nofollow",
			body:     `<a href="/a">a</a><meta name="ROBOTS" content="noindex, NOFOLLOW">`,
			nofollow: true,
			noindex:  true,
		},
		{
			name:     "meta petrel none",
			body:     `<meta name="petrel" content="none"><a href="/a">a</a>`,
			nofollow: true,
			noindex:  true,
		},
		{
			name:    "meta robots noindex only",
			body:    `<meta name="robots" content="noindex"><a href="/a">a</a>`,
			want:    []string{"http://www.example.com/a"},
			noindex: true,
		},
		{
			name: "meta for other bot ignored",
			body: `<meta name="googlebot" content="nofollow"><a href="/a">a</a>`,
			want: []string{"http://www.example.com/a"},
		},
		{
			name:    "shift_jis page",
			body:    sjis,
			want:    []string{"http://www.example.com/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E3%83%9A%E3%83%BC%E3%82%B8.html"},
			charset: "shift_jis",
		},
		{
			name:    "windows-1252 by header",
			ct:      "text/html; charset=windows-1252",
			body:    cp1252,
			want:    []string{"http://www.example.com/caf%C3%A9/%E2%82%AC.html"},
			charset: "windows-1252",
		},
		{
			name:    "iso-8859-1 label means windows-1252",
			ct:      "text/html; charset=ISO-8859-1",
			body:    cp1252,
			want:    []string{"http://www.example.com/caf%C3%A9/%E2%82%AC.html"},
			charset: "windows-1252",
		},
		{
			name:    "invalid utf-8 declared utf-8",
			ct:      "text/html; charset=utf-8",
			body:    "<p>\xff\xfe\xc3</p><a href=\"/a\xffb\">x</a><a href=/c>c</a>",
			want:    []string{"http://www.example.com/a%EF%BF%BDb", "http://www.example.com/c"},
			charset: "utf-8",
		},
		{
			name:    "undeclared invalid utf-8 sniffs as windows-1252",
			body:    "<p>caf\xe9</p><a href=\"/caf\xe9\">x</a>",
			want:    []string{"http://www.example.com/caf%C3%A9"},
			charset: "windows-1252",
		},
		{
			name:    "meta http-equiv charset",
			body:    "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><a href=\"/\x80\">x</a>",
			want:    []string{"http://www.example.com/%E2%82%AC"},
			charset: "windows-1252",
		},
		{
			name: "tag soup",
			body: `<html><body><p><b><a href="/1">1</b></p><a href='/2'<a href=/3>3<table><tr><a href="/4"></td></div><a href="/5" href="/ignored">5<!-- <a href="/comment"> --><a href=/6`,
			want: []string{"http://www.example.com/1", "http://www.example.com/2", "http://www.example.com/4", "http://www.example.com/5"},
		},
		{
			name: "links in script and textarea are not links",
			body: `<script>document.write('<a href="/js">')</script><textarea><a href="/ta"></textarea><a href="/real">r</a>`,
			want: []string{"http://www.example.com/real"},
		},
	}
	base := mustURL(t, "http://www.example.com/dir/page.html")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.ct != "" {
				h.Set("Content-Type", tt.ct)
			}
			r := HTML(base, h, []byte(tt.body), Options{})
			got := linkStrings(r.Links)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("links\n got %q\nwant %q", got, tt.want)
			}
			if r.NoFollow != tt.nofollow || r.NoIndex != tt.noindex {
				t.Errorf("NoFollow, NoIndex = %v, %v; want %v, %v", r.NoFollow, r.NoIndex, tt.nofollow, tt.noindex)
			}
			want := tt.charset
			if want == "" {
				want = "utf-8"
			}
			if r.Charset != want {
				t.Errorf("Charset = %q, want %q", r.Charset, want)
			}
			if r.BadLinks != tt.bad {
				t.Errorf("BadLinks = %d, want %d", r.BadLinks, tt.bad)
			}
			if r.NoFollowLinks != tt.nfLinks {
				t.Errorf("NoFollowLinks = %d, want %d", r.NoFollowLinks, tt.nfLinks)
			}
		})
	}
}

func TestXRobotsTag(t *testing.T) {
	base := mustURL(t, "http://www.example.com/")
	body := []byte(`<a href="/a">a</a>`)
	tests := []struct {
		values            []string
		nofollow, noindex bool
	}{
		{nil, false, false},
		{[]string{"nofollow"}, true, false},
		{[]string{"NoIndex"}, false, true},
		{[]string{"noarchive", "none"}, true, true},
		{[]string{"otherbot: nofollow"}, false, false},
		{[]string{"petrel: noindex, nofollow"}, true, true},
		{[]string{"unavailable_after: 25 Jun 2010 15:00:00 PST"}, false, false},
	}
	for _, tt := range tests {
		h := http.Header{"X-Robots-Tag": tt.values}
		r := HTML(base, h, body, Options{})
		if r.NoFollow != tt.nofollow || r.NoIndex != tt.noindex {
			t.Errorf("X-Robots-Tag %q: NoFollow, NoIndex = %v, %v; want %v, %v", tt.values, r.NoFollow, r.NoIndex, tt.nofollow, tt.noindex)
		}
		if got := len(r.Links); tt.nofollow && got != 0 || !tt.nofollow && got != 1 {
			t.Errorf("X-Robots-Tag %q: %d links", tt.values, got)
		}
	}
}

func TestMaxLinks(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, `<a href="/p%d">%d</a><a href="/p%d">dup</a>`, i, i, i/2)
	}
	base := mustURL(t, "http://www.example.com/")
	tests := []struct {
		max, kept, dropped int
	}{
		{0, 5000, 5000},
		{100, 100, 9900},
		{20000, 10000, 0},
	}
	for _, tt := range tests {
		r := HTML(base, nil, []byte(b.String()), Options{MaxLinks: tt.max})
		if len(r.Links) != tt.kept {
			t.Errorf("MaxLinks %d: %d links, want %d", tt.max, len(r.Links), tt.kept)
		}
		if r.LinksDropped < tt.dropped || (tt.dropped == 0 && r.LinksDropped != 0) {
			t.Errorf("MaxLinks %d: LinksDropped = %d, want >= %d", tt.max, r.LinksDropped, tt.dropped)
		}
		for i, l := range r.Links {
			if want := fmt.Sprintf("/p%d", i); l.PathQuery != want {
				t.Fatalf("MaxLinks %d: link %d = %q, want %q (document order, no duplicates)", tt.max, i, l.PathQuery, want)
			}
		}
	}
}

func TestTextDigest(t *testing.T) {
	a := mustURL(t, "http://www.example.com/a")
	a2 := mustURL(t, "http://www.example.com/other/page?x=1")
	other := mustURL(t, "http://other.example.com/a")
	page := `<html><head><title>News 2024</title><style>p{color:red}</style></head>
<body class="x"><p id="p1">Today is   May 3, 2024.</p><script>var t = 1714694400;</script>
<iframe src="/ad"></iframe></body></html>`
	digest := func(u urlx.URL, body string) [16]byte {
		return HTML(u, nil, []byte(body), Options{}).TextDigest
	}
	ref := digest(a, page)
	same := []struct{ name, body string }{
		{"digits changed", strings.NewReplacer("2024", "1999", "3", "17").Replace(page)},
		{"whitespace changed", strings.NewReplacer("\n", "", "   ", " ", "<p id", "\n\n<p id", "Today", "  Today").Replace(page)},
		{"attributes changed", strings.NewReplacer(`class="x"`, `class="y" data-n="7"`, `id="p1"`, `id="zz" style="a"`).Replace(page)},
		{"script changed", strings.Replace(page, "1714694400", "Date.now() + 'x'", 1)},
		{"style changed", strings.Replace(page, "color:red", "color:blue", 1)},
	}
	for _, tt := range same {
		if got := digest(a, tt.body); got != ref {
			t.Errorf("%s: digest differs", tt.name)
		}
	}
	if digest(a2, page) != ref {
		t.Errorf("same host, other path: digest differs")
	}
	differ := []struct {
		name string
		u    urlx.URL
		body string
	}{
		{"other host", other, page},
		{"text changed", a, strings.Replace(page, "Today", "Tomorrow", 1)},
		{"tag changed", a, strings.Replace(page, "<p id=\"p1\">", "<div id=\"p1\">", 1)},
		{"iframe src changed", a, strings.Replace(page, "/ad", "/ad2", 1)},
		{"word split", a, strings.Replace(page, "Today", "To day", 1)},
		{"empty", a, ""},
	}
	for _, tt := range differ {
		if got := digest(tt.u, tt.body); got == ref {
			t.Errorf("%s: digest unchanged", tt.name)
		}
	}
	if digest(a, "") == digest(other, "") {
		t.Errorf("empty pages of two hosts share a digest")
	}
}

func TestIsHTML(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	pdf := []byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj")
	page := []byte("<!DOCTYPE html><html><body>hi</body></html>")
	sjis := []byte("<p>\x93\xfa\x96\x7b</p>")
	tests := []struct {
		name string
		ct   string
		body []byte
		want bool
	}{
		{"html", "text/html; charset=utf-8", page, true},
		{"html upper", "TEXT/HTML", page, true},
		{"xhtml", "application/xhtml+xml", page, true},
		{"html label, text body without tags", "text/html", []byte("just text"), true},
		{"html label, shift_jis body", "text/html", sjis, true},
		{"html label, empty body", "text/html", nil, true},
		{"png labelled html", "text/html", png, false},
		{"pdf labelled html", "text/html", pdf, false},
		{"gzip labelled html", "text/html", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), false},
		{"plain text", "text/plain", page, false},
		{"image", "image/png", png, false},
		{"no content type, html", "", page, true},
		{"no content type, png", "", png, false},
		{"no content type, text", "", []byte("hello"), false},
		{"malformed params", "text/html; charset", page, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.ct != "" {
			h.Set("Content-Type", tt.ct)
		}
		if got := IsHTML(h, tt.body); got != tt.want {
			t.Errorf("%s: IsHTML = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRefreshURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0; url=/a", "/a"},
		{"0;URL=/a", "/a"},
		{"0, /a", "/a"},
		{" 3.5 ; url = '/a b' trailing", "/a b"},
		{`0; url="/q"`, "/q"},
		{"0; url=/a  ", "/a"},
		{"0; urlx.html", "urlx.html"},
		{"5", ""},
		{"url=/a", ""},
		{"0 /a", ""},
		{"0;", ""},
	}
	for _, tt := range tests {
		got, ok := refreshURL([]byte(tt.in))
		if string(got) != tt.want || ok != (tt.want != "") {
			t.Errorf("refreshURL(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestBOM(t *testing.T) {
	base := mustURL(t, "http://www.example.com/")
	r := HTML(base, nil, append([]byte("\xef\xbb\xbf"), `<a href="/x">x</a>`...), Options{})
	if r.Charset != "utf-8" || len(r.Links) != 1 {
		t.Errorf("UTF-8 BOM: charset %q, %d links", r.Charset, len(r.Links))
	}
}

// TestRequisites checks every form of page requisite, and that they are
// kept apart from the links and only given when asked for.
func TestRequisites(t *testing.T) {
	page := `<html><head><title>R</title>
<link rel=stylesheet href=/css/site.css><link rel=icon href=/favicon.ico><link rel=apple-touch-icon href=/touch.png>
<link rel=preload href=/font.woff2 as=font><link rel=modulepreload href=/mod.js><link rel=manifest href=/app.webmanifest>
<link rel=canonical href=/canonical><link rel=alternate href=/de/>
<script src=/app.js></script><style>@import "/css/more.css"; h1{background:url(img/h1.png)}</style></head>
<body background=/bg.gif><img src=/img/a.png srcset="/img/a2.png 2x, /img/a3.png 3x">
<picture><source srcset="/img/b.webp 1x" type=image/webp><img src=/img/b.png></picture>
<video src=/v.mp4 poster=/poster.jpg><source src=/v.webm><track src=/sub.vtt></video><audio src=/a.mp3></audio>
<object data=/o.svg></object><embed src=/e.swf><input type=image src=/button.png>
<div style="background-image:url('/img/div.png')"></div><img data-src=/img/lazy.png data-srcset="/img/lazy2.png 2x">
<a href=/page.html>page</a><iframe src=/frame.html></iframe><img src=/img/a.png></body></html>`
	base := mustURL(t, "http://www.example.com/index.html")
	r := HTML(base, http.Header{}, []byte(page), Options{Embeds: true})
	var want []string
	for _, p := range []string{"/css/site.css", "/favicon.ico", "/touch.png", "/font.woff2", "/mod.js", "/app.webmanifest",
		"/app.js", "/css/more.css", "/img/h1.png", "/bg.gif", "/img/a.png", "/img/a2.png", "/img/a3.png", "/img/b.webp", "/img/b.png",
		"/v.mp4", "/poster.jpg", "/v.webm", "/sub.vtt", "/a.mp3", "/o.svg", "/e.swf", "/button.png", "/img/div.png",
		"/img/lazy.png", "/img/lazy2.png"} {
		want = append(want, "http://www.example.com"+p)
	}
	if got := linkStrings(r.Embeds); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("embeds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	links := []string{"http://www.example.com/canonical", "http://www.example.com/de/", "http://www.example.com/page.html", "http://www.example.com/frame.html"}
	if got := linkStrings(r.Links); strings.Join(got, " ") != strings.Join(links, " ") {
		t.Errorf("links %q, want %q", got, links)
	}
	if r.Title != "R" {
		t.Errorf("title %q", r.Title)
	}
	off := HTML(base, http.Header{}, []byte(page), Options{})
	if len(off.Embeds) != 0 || strings.Join(linkStrings(off.Links), " ") != strings.Join(links, " ") {
		t.Errorf("without Embeds: embeds %q links %q", linkStrings(off.Embeds), linkStrings(off.Links))
	}
	// nofollow drops the links, not the requisites; the cap applies to each
	// (dropped counts occurrences: /img/a.png twice).
	nf := HTML(base, http.Header{"X-Robots-Tag": {"nofollow"}}, []byte(page), Options{Embeds: true, MaxLinks: 3})
	if len(nf.Links) != 0 || len(nf.Embeds) != 3 || nf.EmbedsDropped != len(want)-3+1 {
		t.Errorf("nofollow, cap 3: links %d embeds %d dropped %d", len(nf.Links), len(nf.Embeds), nf.EmbedsDropped)
	}
}

func TestTitle(t *testing.T) {
	base := mustURL(t, "http://www.example.com/")
	long := strings.Repeat("é", MaxTitle) // two bytes each: cut at a character boundary
	for page, want := range map[string]string{
		"<title>\r\n  Hello,\t&amp;  world \n</title>": "Hello, & world",
		"<title></title><title>second</title>":         "second",
		"<p>no title</p>":                              "",
		"<title>a</title><title>b</title>":             "a",
		"<title>" + long + "</title>":                  long[:MaxTitle],
		"<TITLE>cut at the end":                        "cut at the end",
	} {
		if got := HTML(base, http.Header{}, []byte(page), Options{}).Title; got != want {
			t.Errorf("%.40q: title %.40q, want %.40q", page, got, want)
		}
	}
}

// TestLegacyEncodingQueries checks links on pages in legacy encodings:
// the query in the page's encoding (a character it lacks as &#N;), the
// path in UTF-8, requisites alike, CSS url() in UTF-8.
func TestLegacyEncodingQueries(t *testing.T) {
	base := mustURL(t, "http://legacy.test/")
	for _, tc := range []struct {
		enc  encoding.Encoding
		name string
		text string // the query value, and the expected encoded query
		want string
	}{
		{charmap.Windows1252, "windows-1252", "caf\u00e9\u2603", "caf%E9%26%239731%3B"},
		{charmap.ISO8859_2, "iso-8859-2", "\u017elu\u0165ou\u010dk\u00fd", "%BElu%BBou%E8k%FD"},
		{japanese.ShiftJIS, "shift_jis", "\u65e5\u672c", "%93%FA%96{"},
		{korean.EUCKR, "euc-kr", "\ud55c\uad6d", "%C7%D1%B1%B9"},
		{simplifiedchinese.GB18030, "gb18030", "\u4e2d\u6587", "%D6%D0%CE%C4"},
	} {
		page := "<meta charset=\"" + tc.name + "\"><a href=\"/\u00e9/p?q=" + tc.text + "\">x</a><img src=\"/i?q=" + tc.text + "\">" +
			"<div style=\"background:url('/c?q=\u00e9')\"></div>"
		if tc.enc == charmap.ISO8859_2 || tc.enc == korean.EUCKR || tc.enc == simplifiedchinese.GB18030 || tc.enc == japanese.ShiftJIS {
			page = strings.ReplaceAll(page, "\u00e9", "e") // é is not in every encoding: ASCII paths there
		}
		body, err := tc.enc.NewEncoder().String(strings.ReplaceAll(page, "\u2603", "&#9731;"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := HTML(base, http.Header{}, []byte(body), Options{Embeds: true})
		path := "/%C3%A9/p"
		css := "http://legacy.test/c?q=%C3%A9"
		if !strings.Contains(page, "\u00e9") {
			path, css = "/e/p", "http://legacy.test/c?q=e"
		}
		if r.Charset != tc.name || len(r.Links) != 1 || r.Links[0].String() != "http://legacy.test"+path+"?q="+tc.want {
			t.Errorf("%s: charset %s, links %q, want query %s", tc.name, r.Charset, linkStrings(r.Links), tc.want)
		}
		if len(r.Embeds) != 2 || r.Embeds[0].String() != "http://legacy.test/i?q="+tc.want || r.Embeds[1].String() != css {
			t.Errorf("%s: embeds %q", tc.name, linkStrings(r.Embeds))
		}
	}
}

// TestLinkRelations checks what each <link> relation makes of its href:
// an OpenSearch description (rel=search) and rev=made are followed as
// links, as wget follows them; style sheets, icons, preloads and the
// manifest are requisites; origins and endpoints are not followed.
func TestLinkRelations(t *testing.T) {
	page := `<html><head>
<link rel="search" type="application/opensearchdescription+xml" href="/_static/opensearch.xml">
<link rel=Search href=/search.html><link rev=made href=mailto:docs@example.com><link rev="Made" href=/author.html>
<link rel=author href=/about.html><link rel=index href=/genindex.html><link rel=copyright href=/copyright.html>
<link rel=up href=/up.html><link rel=home href=/home.html><link rel="help license" href=/license.html>
<link rel="alternate stylesheet" href=/alt.css><link rel="shortcut icon" href=/py.svg><link rel=mask-icon href=/mask.svg>
<link rel=dns-prefetch href=//cdn.example.com><link rel=preconnect href=https://fonts.example.com>
<link rel=pingback href=/xmlrpc.php><link rel=webmention href=/wm><link rel=EditURI href=/rsd.xml><link rev=stylesheet href=/rev.css>
</head><body></body></html>`
	base := mustURL(t, "http://www.example.com/index.html")
	r := HTML(base, http.Header{}, []byte(page), Options{Embeds: true})
	var links, embeds []string
	for _, p := range []string{"/_static/opensearch.xml", "/search.html", "/author.html", "/about.html", "/genindex.html",
		"/copyright.html", "/up.html", "/home.html", "/license.html"} {
		links = append(links, "http://www.example.com"+p)
	}
	for _, p := range []string{"/alt.css", "/py.svg", "/mask.svg"} {
		embeds = append(embeds, "http://www.example.com"+p)
	}
	if got := linkStrings(r.Links); strings.Join(got, "\n") != strings.Join(links, "\n") {
		t.Errorf("links\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(links, "\n"))
	}
	if got := linkStrings(r.Embeds); strings.Join(got, "\n") != strings.Join(embeds, "\n") {
		t.Errorf("embeds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(embeds, "\n"))
	}
	if r.BadLinks != 1 {
		t.Errorf("BadLinks %d, want 1 (the mailto: of rev=made)", r.BadLinks)
	}
}
