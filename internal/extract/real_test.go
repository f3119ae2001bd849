package extract

import (
	"bytes"
	"testing"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// realPages renders n pages of the generated web's real shape (`petrel
// testweb --shape real`, what `petrel bench crawl --shape real` crawls).
func realPages(tb testing.TB, n int) [][]byte {
	tb.Helper()
	g, err := testweb.NewGen(testweb.GenConfig{Hosts: 2000, Seed: 1, Port: 80, Shape: testweb.ShapeReal})
	if err != nil {
		tb.Fatal(err)
	}
	pages := make([][]byte, n)
	for i := range pages {
		var b bytes.Buffer
		g.Render(&b, i%2000, i/2000)
		pages[i] = b.Bytes()
	}
	return pages
}

// BenchmarkExtractorReal extracts pages of the real shape with one
// Extractor, as a crawl's reader does: the cost on the real shape's pages,
// by page.
func BenchmarkExtractorReal(b *testing.B) {
	pages := realPages(b, 200)
	var e Extractor
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = e.MainText(pages[i%len(pages)], "")
		i++
	}
}
