package parse

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// cssURLs returns the URLs the CSS scanner finds in css, as strings.
func cssURLs(css string) []string {
	c := cssScanner{b: []byte(css)}
	var out []string
	for u, ok := c.next(); ok; u, ok = c.next() {
		out = append(out, string(u))
	}
	return out
}

func TestCSSScanner(t *testing.T) {
	tests := []struct {
		css  string
		want []string
	}{
		{`a{background:url(a.png)}`, []string{"a.png"}},
		{`a{background:URL( "b c.png" )}`, []string{"b c.png"}},
		{`a{background:url(  'd.png'  )}`, []string{"d.png"}},
		{`a{background:url(  e.png  )}`, []string{"e.png"}},
		{`a{background:url(f g.png)}`, nil},                            // bad url: white space inside
		{`a{background:url(h"i.png) x url(j.png)}`, []string{"j.png"}}, // bad url, then resumes past ')'
		{`a{background:url(k\).png) url(l\ .png)}`, []string{"k).png", "l .png"}},
		{`a{b:url(\6D .png)}`, []string{"m.png"}},
		{`a{b:url(\00006E.png)} c{d:url(\0)}`, []string{"n.png", "\ufffd"}},
		{`a{b:u\72l(o.png)}`, []string{"o.png"}}, // escaped name
		{`a{b:xurl(no.png) -url(no) 1url(no) #url(no) @url(no)}`, nil},
		{`a{b:1.url(p.png)}`, []string{"p.png"}}, // "1" then "." then url(
		{`/* url(no.png) */ a{content:"url(no.png)"; b:url(q.png)}`, []string{"q.png"}},
		{`@import "r.css"; @import url(s.css) print; @import 't.css';`, []string{"r.css", "s.css", "t.css"}},
		{`@IMPORT /* c */ "u.css"; @importx "no.css"; @import; "no.css"`, []string{"u.css"}},
		{`@font-face{src:url(v.woff2) format("woff2"),url("w.woff") format("woff")}`, []string{"v.woff2", "w.woff"}},
		{"a{b:url('x\\\ny.png')}", []string{"xy.png"}},                // continuation in a string
		{"a{b:url('no\nz.png)} c{d:url(aa.png)}", []string{"aa.png"}}, // bad string, then tokens again
		{`a{b:url(ab.png`, []string{"ab.png"}},                        // unterminated at the end
		{`a{b:url("ac.png`, []string{"ac.png"}},                       // unterminated string at the end
		{`a{b:url(ad\`, nil},                                          // invalid escape at the end: bad url
		{"a{b:url(ae\x01.png) url(af.png)}", []string{"af.png"}},
		{`a{b:url()}`, []string{""}},
		{`a{b:image-set(url(ag.png) 1x)}`, []string{"ag.png"}},
	}
	for _, tc := range tests {
		got := cssURLs(tc.css)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("%q: %q, want %q", tc.css, got, tc.want)
		}
	}
}

// preprocessCSS is CSS Syntax's input preprocessing: "\r\n", "\r" and
// "\f" become "\n", NUL becomes U+FFFD.
func preprocessCSS(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte("\f"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte{0}, []byte("\ufffd"))
}

// FuzzCSS checks that the CSS scanner ends on any input, finds at most one
// URL per "url(" or string (so it always moves forward), and finds the same
// URLs in a style sheet before and after preprocessing, which the HTML
// extractor relies on (it scans a <style> as the page has it).
func FuzzCSS(f *testing.F) {
	for _, s := range []string{
		`@import "a.css"; a{background:url( b.png )} /* c */`,
		"a{b:url('x\\\r\ny.png')}\x00c{d:url(\\0 e\x00)}\f",
		`@font-face{src:url(v.woff2) format("woff2")} u\72l(o) 1.url(p)`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, css []byte) {
		raw := cssURLs(string(css))
		if n := bytes.Count(bytes.ToLower(css), []byte("(")) + bytes.Count(css, []byte(`"`)) + bytes.Count(css, []byte("'")); len(raw) > n {
			t.Fatalf("%d URLs from %d openings", len(raw), n)
		}
		pre := cssURLs(string(preprocessCSS(css)))
		if strings.Join(raw, "\x01") != strings.Join(pre, "\x01") || len(raw) != len(pre) {
			t.Fatalf("%q: %q, preprocessed %q", css, raw, pre)
		}
	})
}

func TestSrcset(t *testing.T) {
	tests := []struct {
		srcset string
		want   []string
	}{
		{"a.png", []string{"a.png"}},
		{"a.png 1x, b.png 2x", []string{"a.png", "b.png"}},
		{" a.png  1.5x ,b.png 2e0x,c.png .5x", []string{"a.png", "b.png", "c.png"}},
		{"a.png 480w, b.png 800w 600h", []string{"a.png", "b.png"}},
		{"a.png,b.png", []string{"a.png,b.png"}}, // no white space: one URL with a comma
		{"a.png,, b.png", []string{"a.png", "b.png"}},
		{",,, a.png", []string{"a.png"}},
		{"data:image/png;base64,iVBO 1x, b.png 2x", []string{"data:image/png;base64,iVBO", "b.png"}},
		{"a.png 1x 2x, b.png", []string{"b.png"}},         // two densities
		{"a.png 100w 1x, b.png 0w, c.png -1x", nil},       // w with x, zero width, negative density
		{"a.png 100h, b.png 2q, c.png x, d.png 1.x", nil}, // h alone, unknown, empty number, bad float
		{"a.png (1x, 2x) , b.png", []string{"b.png"}},     // parentheses hold the comma
		{"a.png 1x (future), b.png", []string{"b.png"}},
		{"a.png -0x", []string{"a.png"}},
		{"", nil},
	}
	for _, tc := range tests {
		var got []string
		v := []byte(tc.srcset)
		for u, rest, ok := nextSrcset(v); ok; u, rest, ok = nextSrcset(rest) {
			got = append(got, string(u))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: %q, want %q", tc.srcset, got, tc.want)
		}
	}
}

func TestCSSFile(t *testing.T) {
	base := mustURL(t, "http://cdn.example.com/css/site.css")
	sheet := `@charset "windows-1252"; @import "print.css"; a{background:url(../img/caf` + "\xe9" + `.png?q=` + "\xe9" + `)} b{c:url(//other.example/x.png)} d{e:url(data:image/png;base64,AA)}`
	r := CSS(base, http.Header{"Content-Type": {"text/css"}}, []byte(sheet), Options{})
	want := []string{"http://cdn.example.com/css/print.css", "http://cdn.example.com/img/caf%C3%A9.png?q=%C3%A9", "http://other.example/x.png"}
	if got := linkStrings(r.Embeds); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("embeds %q, want %q", got, want)
	}
	if r.Charset != "windows-1252" || r.BadEmbeds != 1 {
		t.Errorf("charset %q, bad %d", r.Charset, r.BadEmbeds)
	}
	latin2, _ := charmap.ISO8859_2.NewEncoder().String("a{b:url(/ž.png)}")
	r = CSS(base, http.Header{"Content-Type": {"text/css; charset=iso-8859-2"}}, []byte(latin2), Options{MaxLinks: 1})
	if got := linkStrings(r.Embeds); len(got) != 1 || got[0] != "http://cdn.example.com/%C5%BE.png" {
		t.Errorf("iso-8859-2 sheet: %q", got)
	}
	r = CSS(base, http.Header{}, []byte("\xef\xbb\xbfa{b:url(/1)} c{d:url(/2)}"), Options{MaxLinks: 1})
	if len(r.Embeds) != 1 || r.EmbedsDropped != 1 || !utf8.ValidString(r.Embeds[0].String()) {
		t.Errorf("cap: %q dropped %d", linkStrings(r.Embeds), r.EmbedsDropped)
	}
	if !IsCSS(http.Header{"Content-Type": {"text/css; charset=utf-8"}}, "/x") || !IsCSS(http.Header{}, "/a/b.CSS?v=1") || IsCSS(http.Header{"Content-Type": {"text/plain"}}, "/b.css") {
		t.Error("IsCSS")
	}
}
