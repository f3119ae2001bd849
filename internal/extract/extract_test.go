package extract

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestMainTextGolden: a page with a header, navigation, a sidebar, share
// buttons, comments and a footer around an article gives the article alone,
// its headline as Title and each kind of block kept apart in Markdown.
func TestMainTextGolden(t *testing.T) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/article.md")
	if err != nil {
		t.Fatal(err)
	}
	d, err := MainText(page, "text/html; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Markdown(); got != string(want) {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
	if d.Title != "Storm petrels at sea" {
		t.Errorf("Title %q", d.Title)
	}
	kinds := map[Kind]int{}
	for _, b := range d.Blocks {
		kinds[b.Kind]++
	}
	wantKinds := map[Kind]int{Paragraph: 3, Heading: 1, ListItem: 2, Cell: 6, Quote: 1, Code: 1}
	for k, n := range wantKinds {
		if kinds[k] != n {
			t.Errorf("%d blocks of kind %d, want %d", kinds[k], k, n)
		}
	}
	text := d.Text()
	for _, bad := range []string{"News", "Most read", "Share on", "Great article", "Copyright", "tracking"} {
		if strings.Contains(text, bad) {
			t.Errorf("main text holds boilerplate %q", bad)
		}
	}
}

// TestMainTextNone: a page without text is ErrNoMainText, its title kept.
func TestMainTextNone(t *testing.T) {
	d, err := MainText([]byte("<html><head><title> Empty \n page</title></head><body><nav><a href=/>Home</a></nav></body></html>"), "")
	if !errors.Is(err, ErrNoMainText) {
		t.Fatalf("err %v, want ErrNoMainText", err)
	}
	if d.Title != "Empty page" {
		t.Errorf("Title %q", d.Title)
	}
}

// TestMainTextPrefixes: every prefix of a page, and tag soup, extract
// without panicking.
func TestMainTextPrefixes(t *testing.T) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	for i := range page {
		_, _ = MainText(page[:i], "")
	}
	_, _ = MainText([]byte("<p><li><td></table></div><pre><h1></ul></p></br>text"), "")
}

// TestMainTextCharset: a windows-1252 page is decoded.
func TestMainTextCharset(t *testing.T) {
	page := []byte("<p>Caf\xe9 au lait, cr\xe8me br\xfbl\xe9e, and a long enough sentence to count as text of a page, with commas.</p>")
	d, err := MainText(page, "text/html; charset=windows-1252")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Text(), "Café au lait, crème brûlée") {
		t.Errorf("Text %q", d.Text())
	}
}

// TestCompare checks the benchmark's measure on small cases worked by hand.
func TestCompare(t *testing.T) {
	m := Compare("a b c d e", "a b c d e")
	if m.Precision() != 1 || m.Recall() != 1 {
		t.Errorf("identical: %+v", m)
	}
	// truth shingles: abcd, bcde; pred: abcd, bcdx → TP 1, FP 1, FN 1.
	m = Compare("a b c d e", "a, b. c d x")
	if m.Precision() != 0.5 || m.Recall() != 0.5 {
		t.Errorf("half: %+v P %v R %v", m, m.Precision(), m.Recall())
	}
	m = Compare("a b c d", "")
	if m.Precision() != 0 || m.Recall() != 0 || m.TP+m.FP != 0 {
		t.Errorf("empty: %+v", m)
	}
	s := Summarize([]Match{{TP: 1}, {FN: 1}}, 1)
	if s.Precision != 1 || s.Recall != 0.5 || s.Accuracy != 0.5 {
		t.Errorf("Summarize: %+v", s)
	}
}

// BenchmarkMainText extracts the golden page (the benchmark's own pages
// are measured by `petrel bench extract`).
func BenchmarkMainText(b *testing.B) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = MainText(page, "")
	}
}

// FuzzMainText: arbitrary bytes extract and render without panicking, and
// every block has text.
func FuzzMainText(f *testing.F) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(page)
	f.Add([]byte("<table><tr><td>a<tr><td>b</table><ul><li>x<ol><li>y</ul><pre>\n z</pre><br></br>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _ := MainText(b, "")
		_ = d.Markdown()
		_ = d.Text()
		for _, bl := range d.Blocks {
			if strings.TrimSpace(bl.Text) == "" {
				t.Fatalf("empty block %+v", bl)
			}
		}
	})
}

// BenchmarkMainTextSynthetic extracts a page of the synthetic web of the
// crawl benchmarks (the parse package's testdata), to set beside
// parse.BenchmarkHTMLSynthetic: the cost on the headline shape's pages.
func BenchmarkMainTextSynthetic(b *testing.B) {
	page, err := os.ReadFile("../parse/testdata/synthetic-page.html")
	if err != nil {
		b.Skip(err)
	}
	d, _ := MainText(page, "")
	b.Logf("page %d bytes, main text %d bytes in %d blocks", len(page), len(d.Text()), len(d.Blocks))
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = MainText(page, "")
	}
}

// BenchmarkExtractorSynthetic is BenchmarkMainTextSynthetic with one
// Extractor for every page, as a crawl's reader uses it.
func BenchmarkExtractorSynthetic(b *testing.B) {
	page, err := os.ReadFile("../parse/testdata/synthetic-page.html")
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	var e Extractor
	for b.Loop() {
		_, _ = e.MainText(page, "")
	}
}

// TestExtractorReused: an Extractor gives every page the Doc MainText
// gives it, whatever page it extracted before.
func TestExtractorReused(t *testing.T) {
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	pages := [][]byte{article, []byte("<title>T</title><nav>menu</nav>"), article,
		[]byte(`<div class="content"><p>One, two, three: a paragraph long enough to be text.</p></div>`), nil, article}
	if synth, err := os.ReadFile("../parse/testdata/synthetic-page.html"); err == nil {
		pages = append(pages, synth, article, synth)
	}
	var e Extractor
	for i, page := range pages {
		want, wantErr := MainText(page, "")
		got, err := e.MainText(page, "")
		if !reflect.DeepEqual(got, want) || err != wantErr {
			t.Errorf("page %d: reused Extractor gives %+v, %v; MainText %+v, %v", i, got, err, want, wantErr)
		}
	}
}

// TestMainTextEmptyTitle: an empty <title> does not take the next text as
// the title (failed before: the first paragraph became the title).
func TestMainTextEmptyTitle(t *testing.T) {
	page := "<html><head><title></title></head><body><p>The first paragraph of the page, long enough to be text, with a comma.</p></body></html>"
	d, err := MainText([]byte(page), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "" || len(d.Blocks) != 1 {
		t.Errorf("Title %q, %d blocks; want no title and the paragraph", d.Title, len(d.Blocks))
	}
}

// FuzzAppendCollapsed checks appendCollapsed against appendCollapsedRef,
// the same collapsing done a byte at a time.
func FuzzAppendCollapsed(f *testing.F) {
	for _, s := range []string{"a  b\n\tc ", " a", "\x00 \x1f  \f\r", "plain text, one space.", "  ", "x\u00a0 y"} {
		f.Add([]byte("x"), []byte(s))
		f.Add([]byte("x "), []byte(s))
		f.Add([]byte(nil), []byte(s))
	}
	f.Fuzz(func(t *testing.T, buf, text []byte) {
		got := appendCollapsed(bytes.Clone(buf), text)
		if want := appendCollapsedRef(bytes.Clone(buf), text); !bytes.Equal(got, want) {
			t.Fatalf("appendCollapsed(%q, %q) = %q; want %q", buf, text, got, want)
		}
	})
}

// appendCollapsedRef is appendCollapsed a byte at a time.
func appendCollapsedRef(buf, t []byte) []byte {
	space := len(buf) == 0 || buf[len(buf)-1] == ' ' || buf[len(buf)-1] == '\n'
	for _, c := range t {
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' {
			if !space {
				buf = append(buf, ' ')
				space = true
			}
			continue
		}
		buf = append(buf, c)
		space = false
	}
	return buf
}
