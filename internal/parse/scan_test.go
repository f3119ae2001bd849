package parse

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// scanCases are pages on which the scanner must give the Result of the
// reference walk: every construct of the HTML tokenizer that the scanner
// mirrors, its corners, and what the page ends in the middle of.
var scanCases = []string{
	// Text, '<' as text, markup starts.
	``,
	`plain text only`,
	`a < b, c<3 d, x <= y, <<a href=/lt>x</a>, 1<2<3`,
	`text at the end <`,
	`text at the end </`,
	`</`,
	`<`,
	`<a`,
	`<a href=/cut`,
	`text <a href=/cut`,
	`<p>par</p>text</p`,
	`x</>y</ x>z</1>w</-->v<a href=/after>`,
	`<?xml version="1.0"?><a href=/pi>x</a><?php echo "<a href=/php>"; ?>`,
	`<?`,
	`<?no end`,
	// Comments, doctypes, bogus comments.
	`<!-- <a href="/comment"> --><a href=/c1>`,
	`<!--> <a href=/c2>`,
	`<!---> <a href=/c3>`,
	`<!----> <a href=/c4>`,
	`<!-- --!> <a href=/c5>`,
	`<!-- --!-> <a href=/c6no> --> <a href=/c6>`,
	`<!-- --!x> <a href=/c7no> --> <a href=/c7>`,
	`<!-- -- > <a href=/c8no> --> <a href=/c8>`,
	`<!-- - -> <a href=/c9no> ---> <a href=/c9>`,
	`<!-- --!!> <a href=/c10no> --> <a href=/c10>`,
	`<!-- a --!--> <a href=/c13> -->`,
	`<!-- a --!-!> <a href=/c14> -->`,
	`<!--x--!`,
	`<!--x--`,
	`<!--x-`,
	`<!--`,
	`<!-`,
	`<!`,
	`<!>`,
	`<!>x<a href=/c11>`,
	`<!- x> <a href=/c12>`,
	`<!DOCTYPE html><a href=/d1>`,
	`<!doctype html public "-//W3C//DTD HTML 4.01//EN" "x>y"><a href=/d2>`,
	`<!DOCTYPE`,
	`<!DOCTYPE `,
	`<!DOCTY`,
	`<!DOCTYPEhtml>x`,
	`<![CDATA[ <a href=/cdata> ]]> <a href=/d3>`,
	`a<!---->b &am<!---->p; c&amp<!---->;`,
	"a\r<!---->\nb\r",
	// Raw text and RCDATA elements.
	`<script>if (a<b) document.write("<a href='/s'>")</script><a href=/r1>`,
	`<script><!-- <script> </script> --></script> <a href=/r2>`,
	`<script><!-- <script> </script> --> </script> <a href=/r3>`,
	`<script><!--</script><a href=/r4>`,
	`<script><!-- x --></script><a href=/r5>`,
	`<script><!-- <SCRIPT>a</script>b</script>c --><a href=/r6></script>d`,
	`<script><!-- <scripts> </script> <a href=/r7>`,
	`<script><!-- <script/> --!> </script> <a href=/r8>`,
	`<script><!-- - -< </script> <a href=/r9>`,
	`<script><!-- <scr </script> <a href=/r10>`,
	`<script><!-- <1 <script> </script> x --> </script>y`,
	`<script><!--<script></script><script></script>x</script>y`,
	`<script><!--<script></script>--><script></script>x</script>y`,
	`<script><!--<script>--></script>x</script>y`,
	`<script><!-- a -> <script> </script> b </script>c`,
	`<script><!--<script> <x </script> y </script>z`,
	`<script><!--<script`,
	`<script><!--<script>`,
	`<script><!--<script></script`,
	`<script><!--<script></`,
	`<script><!--<`,
	`<script><!--`,
	`<script><!-`,
	`<script><!`,
	`<script><`,
	`<script>x</scr</script>y`,
	`<script>x</SCRIPT >y<a href=/r11>`,
	`<script>x</script/>y`,
	`<script>x</scriptx>y</script`,
	`<script>x</script`,
	`<script>x</`,
	`<script>`,
	`<script></script>text`,
	`<script/>text in self-closing script<a href=/r12>`,
	`<script a=/>text`,
	`<script a=b/>text`,
	`<script a=/ a=/>text`,
	`<script a=/ b=/>text`,
	`<script a="/"/>text`,
	`<script a='x'/>text`,
	`<script a b/>text`,
	`<script a / >text`,
	`<script / >text`,
	`<script A=/ a=/>text`,
	`<script a=x A=/>text`,
	`<style/>text`,
	`<style a=/>text`,
	`<SCRIPT>hidden</SCRIPT>shown`,
	`<style>p{}</style>shown<style>x`,
	`<Style>a<a href=/r13></stylE>b`,
	`<title>a &amp; b &lt;a href=/t1&gt; <a href=/t2></title><a href=/t3>`,
	`<title>x</titlex></title>`,
	`<title>x</title`,
	`<title>x</ title>y</title>`,
	"<title>a\x00b\r\nc&#0;</title>",
	`<title></title>`,
	`<textarea><a href="/ta">&amp;&ampx</textarea><a href="/real">r</a>`,
	`<textarea>x`,
	`<xmp><a href=/x1>&amp;</xmp><a href=/x2>`,
	`<iframe src=/if1><a href=/in>&amp;</iframe><a href=/if2>`,
	`<iframe src=/if3>`,
	`<iframe src="">x</iframe>`,
	`<iframe src>x</iframe>`,
	`<iframe>x</iframe>`,
	`<frame src=/f1 src=/f2><frame src="">`,
	`<noscript><a href=/ns>&lt;</noscript>x`,
	`<noembed><a href=/ne></noembed>x`,
	`<noframes><a href=/nf></noframes>x`,
	`<plaintext><a href=/p></plaintext>&amp;`,
	"<plaintext>\x00\r\n",
	`<plaintext>`,
	`<PlainText>x`,
	"<script>\x00</script>\x00",
	// Attributes.
	`<a href=/u1>x</a><a href='/u2'>x</a><a href="/u3">x</a>`,
	`<a href=/a1 href=/a2>`,
	`<a HREF=/a3>`,
	`<A Href='/a4'>`,
	`<a href = "/a5" >`,
	"<a\thref\n=\r'/a6'\f>",
	`<a href=/a7/>`,
	`<a href="/a8"/>`,
	`<a href=/a9/ >`,
	`<a rel=nofollow rel=x href=/a10>`,
	`<a rel=x rel=nofollow href=/a11>`,
	`<a REL="Nofollow" href=/a12>`,
	`<a =href=/a13>`,
	`<a ==/a14 href=/a14b>`,
	`<a = href=/a14c>`,
	`<a =x href=/a14d>`,
	`<a href>`,
	`<a href=>`,
	`<a href="">`,
	`<a href= >`,
	`<a/href=/a15>`,
	`<a//href=/a16>`,
	`<a href/x=/a17>`,
	`<a href='/a18>`,
	`<a href="/a19`,
	`<a href=/a20`,
	`<a b="c'd" href=/a21>`,
	`<a b='c"d' href="/a22">`,
	`<a href="/a23" y="z>`,
	`<a href=/a24"q'r<s>`,
	`<a href=/a25>>`,
	`<a href="/a26"title=x>`,
	`<a title=x href="/a27"href=/no>`,
	`<a href=a=b>`,
	`<area href=/area1><area nohref>`,
	`<a href=/wrong-case-dup HREF=/x hReF=/y>`,
	`<a href=/z1 /><a href=/z2 / >`,
	`<br/><br /><img src=x/><p/>`,
	`</a href=/end-tag-attr><a href=/a28>`,
	`</p title=">"><a href=/a29>`,
	`</p title=">`,
	`</p`,
	`</p `,
	// Character references in text and values.
	`<a href="/p?a=1&amp;b=2">1</a><a href="/p?c=3&d=4">2</a><a href="&#x2F;q&#47;r">3</a>`,
	`<a href="/caf&eacute;">4</a><a href="/caf&eacute">5</a><a href="/&Eacute;">6</a>`,
	`<a href="/e?x=1&ampx">`,
	`<a href="/e?x=1&ampx=2">`,
	`<a href="/e?x=1&amp=2">`,
	`<a href="/e?x=1&amp;=2">`,
	`<a href="/e?x=1&copy=2&copy;3&copyx">`,
	`<a href="/e?&lt&gt&quot&apos&apos;&nbsp&nbsp;">`,
	`<a href="/e?&notit;&notin;&not&noti">`,
	`<a href="/e?&NotEqualTilde;&fjlig;&nGt;&nvlt;">`,
	`<a href="/e?&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;&ampaaaaaaaaaaaaaaaaaaaaaaaaaaa">`,
	`<a href="/e?&#0;&#x110000;&#xD800;&#128;&#x80&#x9f;&#150;&#13;&#10;&#99999999999999;">`,
	`<a href="/e?&#&#x&#;&#x;&#xg&#a&">`,
	`<a href="/e?&">`,
	`<a href="/e&#`,
	`<a href=&amp>`,
	`<a href=&#`,
	`text &amp; &lt;b&gt; &ampx &amp=1 &notit; &notin; &not &noti &copy=2 &#x2F;&#47; &#0; &#128; &#xD800; &#x110000; &# &#x &; & end &`,
	`&NotEqualTilde;&fjlig;&nGt;&nvlt;&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;&ampaaaaaaaaaaaaaaaaaaaaaaaaa`,
	`&eacute&Eacute;&AMP&amp;&AMP;&LT;&lt&GT&gt&QUOT&quot&COPY&REG&reg&trade;&TRADE;&hellip;&mdash;&mdash&ndash;`,
	`&#65;&#x41;&#X41&#0065&#x0041;B &#1234567;`,
	"&amp\r\n&#x41\r&\x00&#\x00",
	`<base href="/b/&amp;x/"><a href=y>`,
	`<meta name=robots content="no&#102;ollow"><a href=/m1>`,
	`<meta name="r&#111;bots" content=noindex>`,
	`<meta http-equiv=refresh content="0;url=/m2?a&amp;b">`,
	`<iframe src="/i?a&amp;b&#0;">x</iframe>`,
	`<iframe src="/i?a&eacute;&ampx">x</iframe>`,
	// Meta and base.
	`<meta name=robots content=nofollow content=noindex><a href=/m3>`,
	`<meta content=noindex name=robots name=other><a href=/m4>`,
	`<meta name=robots><meta content=nofollow><a href=/m5>`,
	`<META NAME=ROBOTS CONTENT=NOFOLLOW><A HREF=/m6>`,
	`<meta http-equiv=REFRESH content="1; URL=/m7" http-equiv=x>`,
	`<meta http-equiv=refresh content="">`,
	`<base href=/b1/><base href=/b2/><a href=x>`,
	`<base><base href=/b3/><a href=x>`,
	`<base href><a href=x>`,
	`<BASE HREF="https://other.example/z/"><a href=q>`,
	// NULs.
	"<a\x00 href=/n1>\x00</a\x00>",
	"<a href=\"/n2\x00x\">",
	"<a hr\x00ef=/n3 href=/n4>",
	"<iframe src=\"a\x00\">x</iframe>",
	"<t\x00itle>x</title>te\x00xt",
	"<scr\x00ipt>x</script>",
	"<\x00a href=/n5>",
	"te\x00xt <p>\x00</p> \x00",
	// Newlines.
	"a\r\nb\rc\n\rd\r\r\ne\r",
	"<a href=\"/a\r\nb\">x</a><a href=\"/c\rd\">y</a>",
	"<iframe src=\"x\ry\r\nz\">x</iframe>",
	"<title>a\r\n</title>\r<p>\r\n</p>",
	"<a\r\nhref=/cr1\r>x\r\n</a\r\n>",
	// Invalid UTF-8 and non-ASCII.
	"\xff<a href=\"/\xfe\">\xc3</a>",
	"<\xffa>x</\xffa>",
	"<a\xff href=/x1>",
	"<a href=/x2 \xff=1 h\xffref=/no>",
	"<Ä href=/x3>ä</Ä>",
	"<a href=/x4>caf\xc3\xa9 na\xefve</a>",
	"<ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ>long</ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ>",
	"<scrİpt>x</scrİpt>",
	"\xef\xbb\xbf<a href=/bom>",
	// Tag soup.
	`<html><body><p><b><a href="/1">1</b></p><a href='/2'<a href=/3>3<table><tr><a href="/4"></td></div><a href="/5" href="/ignored">5<!-- <a href="/comment"> --><a href=/6`,
	`<a href=/s1><a href=/s2 <a href=/s3>><b <i>x</b </i>>`,
	`<p <p =x "y" 'z'>text</p <p>`,
	`<a href="/q1"rel="nofollow">x</a><a href='/q2'rel='x'>`,
	`<div><span>word1 word2</span><em>word3</em>, 4 words</div>`,
	// Page requisites and titles.
	`<title> A  &amp;\r\n title </title><title>second</title>`,
	`<title></title><title>second</title>`,
	`<title>cut`,
	`<TITLE>T</TITLE ><img src=/i1 srcset="/i2 1x, /i3 2x" SRC=/no data-src=/i4>`,
	`<picture><source srcset="/p1.webp 100w,/p2.webp 200w" type=image/webp><source src=/p3><img src=/p4></picture>`,
	`<video src=/v1 poster="/v2.jpg"><track src=/v3.vtt><source src=/v4.mp4></video><audio src=/a1>`,
	`<script src=/s1.js></script><script src="/s2.js" type=module>x("<img src=/no>", "/no.png")</script>`,
	"<script>a = '/j1.png'; b = `${d}j2.svg`</script><script type=module>x(\"j3.css\")</script><script type=application/ld+json>{\"logo\": \"/no.png\"}</script><script type=text/template>\"no.png\"</script>",
	`<script/>"/j4.png"<script></script><script>"j5.png`,
	`<link rel=stylesheet href=/c1.css><link rel="shortcut icon" href=/c2.ico><link rel=apple-touch-icon href=/c3>`,
	`<link rel=preload href=/c4 as=font><link rel=modulepreload href=/c5><link rel=manifest href=/c6><link REL=StyleSheet href=/c7>`,
	`<link rel=canonical href=/l1><link rel="alternate" hreflang=de href=/l2><link rel=next href=/l3><link rel=dns-prefetch href=//cdn.x/><link href=/l4>`,
	`<object data=/o1.swf></object><embed src=/o2><input type=IMAGE src=/o3><input type=text src=/no><body background=/o4>`,
	`<div style="background: url( '/y1.png' ) no-repeat; border-image: URL(/y2.png)" data-srcset="/y3 1x, /y4 bad" data-src=/y5>`,
	`<style>@import "/st1.css"; @import url(/st2.css) screen; a{background:url(st3.png)} /* url(/no) */ p:after{content:"url(/no)"}</style>`,
	"<style>b{background:url(/st4\\.png)}\r\nc{x:url('/st5\\\r\n.png')}\x00d{y:url(/st6\x00)}</style>",
	`<style/>a{background:url(/st7)}<style></style><style>`,
	`<base href=/b/ style="background:url(x.png)"><img src=y.png style=background:url(z.png)>`,
	`<img src="data:image/png;base64,AAAA" srcset="data:image/gif;base64,R0 1x"><img src="  "><img src>`,
	`<img srcset="/i5.png 1x 2x, /i6.png 100w 2x, /i7.png 50h, /i8.png 100w 50h, /i9.png,, /i10.png (x, y) 1x, /i11.png 0w">`,
	`<a href=/al style=background:url(/ae)><iframe src=/if style="x:url(/ie)">`,
}

// testBase is the page URL of the differential tests.
const testBase = "http://www.example.com/dir/page.html"

// checkAgrees fails t when HTML and the reference walk disagree on body.
func checkAgrees(t *testing.T, base urlx.URL, body []byte) {
	t.Helper()
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	for _, embeds := range []bool{false, true} {
		opts := Options{MaxLinks: 50, Embeds: embeds, JSLiterals: embeds}
		got := HTML(base, h, body, opts)
		want := htmlReference(base, h, body, opts)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("page %q, embeds %v:\nscanner   %s\nreference %s", body, embeds, dumpResult(got), dumpResult(want))
		}
	}
}

func dumpResult(r Result) string {
	return fmt.Sprintf("links %q embeds %q title %q nofollow %v noindex %v charset %s dropped %d/%d nfl %d bad %d/%d digest %x simhash %x shingles %d",
		linkStrings(r.Links), linkStrings(r.Embeds), r.Title, r.NoFollow, r.NoIndex, r.Charset, r.LinksDropped, r.EmbedsDropped,
		r.NoFollowLinks, r.BadLinks, r.BadEmbeds, r.TextDigest, r.SimHash, r.Shingles)
}

func TestScanAgrees(t *testing.T) {
	base := mustURL(t, testBase)
	for _, c := range scanCases {
		checkAgrees(t, base, []byte(c))
		// The same construct after text and before more markup, which
		// moves token boundaries and EOFs around.
		checkAgrees(t, base, []byte("lead text "+c+" <p>tail &amp; text</p>"))
	}
	checkAgrees(t, base, benchPage())
}

// TestScanAgreesOnPrefixes checks every prefix of a page rich in constructs:
// a page cut off anywhere must give the reference's Result too.
func TestScanAgreesOnPrefixes(t *testing.T) {
	base := mustURL(t, testBase)
	page := []byte(`<!DOCTYPE html><html><head><title>T &amp; t</title><meta name=robots content="noindex">` +
		`<script><!-- if(a<b){x("</scr"+"ipt>")} <script>s</script> --></script><style>p{}</style></head>` +
		"<body>\r\n<!-- c --><p class='x'>One &copy; two&#x41;\x00</p><a href=\"/a?b=1&amp;c\" rel=x>l</a>" +
		`<iframe src="/f">i</iframe><textarea>&lt;a&gt;</textarea><?pi?></x ><br/><a href=/end/>` +
		`<img src=/i srcset="/j 1x, /k 2x" style="background:url('/l')"><link rel=stylesheet href=/m>` +
		`<style>@import "/n"; a{b:url(/o)}</style>` +
		`<plaintext>rest &amp; <a href=/no>`)
	for i := range len(page) + 1 {
		checkAgrees(t, base, page[:i])
	}
}

// TestKnownRefs holds every reference knownRef expands to x/net/html's
// expansion of it, in text and in an attribute value. The names are read
// from knownRef's source, so that no entry escapes the test.
func TestKnownRefs(t *testing.T) {
	names := knownRefNames(t)
	if len(names) < 20 {
		t.Fatalf("found %d names in knownRef", len(names))
	}
	for _, name := range names {
		v, ok := knownRef([]byte(name))
		if !ok {
			t.Errorf("knownRef(%q) not found", name)
			continue
		}
		if want := html.UnescapeString("&" + name); v != want {
			t.Errorf("knownRef(%q) = %q; text expansion %q", name, v, want)
		}
		z := html.NewTokenizer(strings.NewReader("<a v=&" + name + ">"))
		z.Next()
		if _, want, _ := z.TagAttr(); v != string(want) {
			t.Errorf("knownRef(%q) = %q; attribute expansion %q", name, v, want)
		}
	}
}

// knownRefNames returns the case labels of knownRef's switch.
func knownRefNames(t *testing.T) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "scan.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "knownRef" {
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				lit, ok := e.(*ast.BasicLit)
				if !ok {
					t.Fatalf("knownRef: case label %T is not a literal", e)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, s)
			}
			return true
		})
	}
	return names
}

// checkCharRef fails t when appendCharRef decodes the text or attribute
// value s (starting with '&') otherwise than x/net/html: in text
// UnescapeString, in an attribute TagAttr.
func checkCharRef(t *testing.T, s string) {
	t.Helper()
	got, n := appendCharRef(nil, []byte(s), false)
	got = append(got, s[n:]...)
	if want := html.UnescapeString(s); string(got) != want {
		t.Errorf("text %q: %q, want %q", s, got, want)
	}
	got, n = appendCharRef(nil, []byte(s), true)
	got = append(got, s[n:]...)
	z := html.NewTokenizer(strings.NewReader(`<a v="` + s + `">`))
	z.Next()
	if _, want, _ := z.TagAttr(); !bytes.Equal(got, want) {
		t.Errorf("attribute %q: %q, want %q", s, got, want)
	}
}

// TestAppendCharRefEntities checks every entity of x/net/html's table, and
// its prefixes and extensions, read from the module's entity.go (found next
// to the compiled package's source).
func TestAppendCharRefEntities(t *testing.T) {
	file, _ := runtime.FuncForPC(reflect.ValueOf(html.UnescapeString).Pointer()).FileLine(0)
	path := filepath.Join(filepath.Dir(file), "entity.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Skipf("x/net/html's entity table: %v", err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				name, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
		}
		return true
	})
	if len(names) < 2000 {
		t.Fatalf("%s: %d entities", path, len(names))
	}
	for _, name := range names {
		bare := strings.TrimSuffix(name, ";")
		for _, s := range []string{name, name + "x", name + "=", bare, bare + "=", bare + "x", bare + "x;", bare[:len(bare)-1] + ";"} {
			checkCharRef(t, "&"+s)
		}
	}
}

// TestAppendCharRef checks reference decoding, fast and slow paths, against
// x/net/html: in text through UnescapeString, in attributes through TagAttr.
func TestAppendCharRef(t *testing.T) {
	refs := []string{
		"&", "&;", "&#", "&#x", "&#;", "&#x;", "&#xg", "&#a", "&#65", "&#65;", "&#x41", "&#X41;",
		"&#0;", "&#128;", "&#x9F;", "&#xD800;", "&#x10FFFF;", "&#x110000;", "&#99999999999999999999;",
		"&amp", "&amp;", "&ampx", "&ampx;", "&amp=", "&ampx=", "&amp;=", "&eacute", "&eacute;",
		"&notin;", "&notit;", "&not", "&noti", "&noti=", "&NotEqualTilde;", "&fjlig;", "&nGt;",
		"&copy=", "&copyx", "&AMP", "&Amp;", "&x", "&x;", "&123;", "&a1b2;",
	}
	for _, r := range refs {
		for _, tail := range []string{"", " tail", "=", "x", ";"} {
			checkCharRef(t, r+tail)
		}
	}
}

// TestScanNoAllocs checks that a page with common references, CRLFs, raw
// text and attributes needing decoding scans without allocating.
func TestScanNoAllocs(t *testing.T) {
	page := append(benchPage(), "<p>a\r\nb &nbsp; &#169; &mdash;</p><script>\x00</script><a href='/x?a&amp;b\r\n'>"...)
	allocs := testing.AllocsPerRun(20, func() {
		var s scanner
		s.init(page)
		for k := s.next(); k != tokEOF; k = s.next() {
			switch k {
			case tokText:
				for _, ok := s.textPiece(); ok; _, ok = s.textPiece() {
				}
			case tokStartTag:
				s.attr("href")
				s.attr("rel")
				s.selfClosing()
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per page", allocs)
	}
}

// FuzzScanAgrees checks that the scanner-driven HTML gives the reference
// walk's Result on any page. It is seeded with scanCases and FuzzExtract's
// corpus; the page is declared UTF-8 so that its bytes reach the scanner
// unchanged.
func FuzzScanAgrees(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	for _, b := range corpusBodies(f, filepath.Join("testdata", "fuzz", "FuzzExtract")) {
		f.Add(b)
	}
	base, err := urlx.Parse(testBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgrees(t, base, body)
	})
}

// corpusBodies returns the first ([]byte) value of each file of the fuzz
// corpus in dir.
func corpusBodies(tb testing.TB, dir string) [][]byte {
	files, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, e := range files {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					tb.Fatalf("%s: %v", e.Name(), err)
				}
				out = append(out, []byte(s))
				break
			}
		}
	}
	return out
}

// BenchmarkScan measures the scanner alone on the benchmark page, doing
// what the extractor asks of it.
func BenchmarkScan(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		var s scanner
		s.init(page)
		for k := s.next(); k != tokEOF; k = s.next() {
			switch k {
			case tokText:
				for _, ok := s.textPiece(); ok; _, ok = s.textPiece() {
				}
			case tokStartTag:
				if name := s.tagName(); string(name) == "a" {
					s.attr("href")
					s.attr("rel")
				}
			case tokEndTag:
				s.tagName()
			}
		}
	}
}

// BenchmarkScanTokenizer measures x/net/html's Tokenizer doing the same,
// as the reference walk does.
func BenchmarkScanTokenizer(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	var nameBuf [16]byte
	for b.Loop() {
		z := html.NewTokenizer(bytes.NewReader(page))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			switch tt {
			case html.TextToken:
				z.Text()
			case html.StartTagToken, html.SelfClosingTagToken:
				if name := tagName(z, &nameBuf); string(name) == "a" {
					for more := true; more; {
						_, _, more = z.TagAttr()
					}
				}
			case html.EndTagToken:
				tagName(z, &nameBuf)
			}
		}
	}
}

// FuzzLookupAttrs: one walk of a start tag finds for each key what attr
// finds (the first of duplicates, decoded), whatever the keys looked up
// together.
func FuzzLookupAttrs(f *testing.F) {
	for _, s := range []string{
		`<div class="a b" id=x hidden style="display: none">`,
		`<a HREF="/x" href=/y title='t&amp;u' rel=nofollow>`,
		"<p style=\"a\r\nb\" Class=c class=d aria-hidden=TRUE/>",
		`<img src alt= title="&#0;">`,
	} {
		f.Add(s)
	}
	keys := []string{"hidden", "aria-hidden", "style", "role", "class", "id", "href", "title"}
	f.Fuzz(func(t *testing.T, page string) {
		var s scanner
		s.init([]byte(page))
		for k := s.next(); k != tokEOF; k = s.next() {
			if k != tokStartTag {
				continue
			}
			got := s.lookupAttrs(keys)
			for i, key := range keys {
				v, ok := got.Get(i)
				wv, wok := s.attr(key)
				if ok != wok || !bytes.Equal(v, wv) || (v == nil) != (wv == nil) {
					t.Fatalf("%q: key %q: lookupAttrs gives %q, %v; attr %q, %v", page, key, v, ok, wv, wok)
				}
			}
		}
	})
}
