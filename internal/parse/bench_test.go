package parse

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/lang"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// benchPage returns a ~20 KiB page with about 40 links, typical of a news or
// catalogue page.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Catalogue page 17</title>
<link rel="stylesheet" href="/static/site.css"><style>body{font-family:sans-serif}.item{margin:4px}</style>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script></head><body>
<header><nav><ul>`)
	for i := range 8 {
		fmt.Fprintf(&b, `<li class="nav-item"><a class="nav-link" href="/section/%d/">Section %d</a></li>`, i, i)
	}
	b.WriteString("</ul></nav></header><main>\n")
	for i := 0; b.Len() < 19*1024; i++ {
		fmt.Fprintf(&b, `<div class="item" id="item-%d"><h2>Item number %d</h2><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Price: %d.%02d EUR &amp; free shipping.</p>`, i, i, i*7, i%100)
		if i%2 == 0 && i < 60 {
			fmt.Fprintf(&b, `<a href="../items/%d.html?ref=list&amp;page=17#reviews" title="Item %d">details</a>`, i, i)
		}
		b.WriteString("</div>\n")
	}
	b.WriteString(`</main><footer><a href="https://www.example.org/about">About</a> <a href="mailto:info@example.com">Mail</a> <a rel="nofollow" href="/login">Login</a></footer></body></html>`)
	return []byte(b.String())
}

func BenchmarkHTML(b *testing.B) { benchmarkHTML(b, Options{}) }

// BenchmarkHTMLEmbeds is BenchmarkHTML with requisites extracted (the page
// has a style sheet link and a <style> block).
func BenchmarkHTMLEmbeds(b *testing.B) { benchmarkHTML(b, Options{Embeds: true}) }

func benchmarkHTML(b *testing.B, opts Options) {
	page := benchPage()
	base, err := urlx.Parse("http://www.example.com/catalogue/list/17.html")
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	r := HTML(base, h, page, opts)
	b.Logf("page %d bytes, %d links, %d requisites", len(page), len(r.Links), len(r.Embeds))
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_ = HTML(base, h, page, opts)
	}
}

// BenchmarkHTMLSynthetic parses a page of the synthetic web the crawl
// benchmarks use (testdata/synthetic-page.html, saved from `petrel testweb`):
// random syllable words, so no text pattern repeats.
func BenchmarkHTMLSynthetic(b *testing.B) { benchmarkHTMLSynthetic(b, Options{}) }

// BenchmarkHTMLSyntheticEmbeds is BenchmarkHTMLSynthetic with requisites
// extracted: the synthetic web's pages have none, so it should cost the
// same.
func BenchmarkHTMLSyntheticEmbeds(b *testing.B) { benchmarkHTMLSynthetic(b, Options{Embeds: true}) }

func benchmarkHTMLSynthetic(b *testing.B, opts Options) {
	page, err := os.ReadFile("testdata/synthetic-page.html")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := urlx.Parse("http://h000.petrel.test:38007/")
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_ = HTML(base, h, page, opts)
	}
}

func BenchmarkHTMLWindows1252(b *testing.B) {
	page := benchPage()
	base, err := urlx.Parse("http://www.example.com/catalogue/list/17.html")
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"text/html; charset=windows-1252"}}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_ = HTML(base, h, page, Options{})
	}
}

func BenchmarkIsHTML(b *testing.B) {
	page := benchPage()
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	b.ReportAllocs()
	for b.Loop() {
		_ = IsHTML(h, page)
	}
}

// BenchmarkHTMLSyntheticText is BenchmarkHTMLSynthetic keeping the first
// 4 KiB of the visible text (Options.MaxText), as a crawl that detects
// languages parses a page.
func BenchmarkHTMLSyntheticText(b *testing.B) { benchmarkHTMLSynthetic(b, Options{MaxText: 4 << 10}) }

// BenchmarkHTMLTextLanguages is what a crawl with --languages does with a
// page beyond the parse: BenchmarkHTMLSyntheticText, then lang.Detect of
// its title and text, for BenchmarkHTML's page and the synthetic one.
func BenchmarkHTMLTextLanguages(b *testing.B) {
	synth, err := os.ReadFile("testdata/synthetic-page.html")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := urlx.Parse("http://h000.petrel.test:38007/")
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	for name, page := range map[string][]byte{"catalogue": benchPage(), "synthetic": synth} {
		b.Run(name, func(b *testing.B) {
			res := HTML(base, h, page, Options{MaxText: 4 << 10})
			b.Logf("%d bytes of text: %v", len(res.Text), lang.Detect(res.Title+"\n"+string(res.Text)))
			b.ReportAllocs()
			for b.Loop() {
				res := HTML(base, h, page, Options{MaxText: 4 << 10})
				lang.Detect(res.Title + "\n" + string(res.Text))
			}
		})
	}
}
