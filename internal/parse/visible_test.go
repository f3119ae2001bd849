package parse

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestMaxText: Result.Text is the start of the text PageMeta.Text holds,
// cut at a character boundary within the bound, with a line break after
// it; without MaxText it is nil.
func TestMaxText(t *testing.T) {
	base, _ := urlx.Parse("http://a.test/")
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	page := []byte("<title>T</title><p>Grüße aus  Köln</p><script>x=1</script><div>" + strings.Repeat("éà ", 400) + "</div><p>end</p>")
	var m PageMeta
	whole := HTML(base, h, page, Options{Meta: &m})
	if whole.Text != nil {
		t.Errorf("Text without MaxText: %q", whole.Text)
	}
	if got := HTML(base, h, page, Options{MaxText: 1 << 20}).Text; !bytes.Equal(got, m.Text) {
		t.Errorf("unbounded Text %q, PageMeta.Text %q", got, m.Text)
	}
	for _, max := range []int{1, 5, 16, 17, 18, 100} {
		got := HTML(base, h, page, Options{MaxText: max}).Text
		body := bytes.TrimSuffix(got, []byte("\n"))
		if len(body) > max || !utf8.Valid(body) || !bytes.HasPrefix(m.Text, body) || !bytes.HasSuffix(got, []byte("\n")) {
			t.Errorf("MaxText %d: %q, not a valid prefix of %q within the bound", max, got, m.Text[:30])
		}
		if len(body) < max-3 {
			t.Errorf("MaxText %d: only %d bytes", max, len(body))
		}
	}
}

// FuzzVisibleText checks that VisibleText, whose pass has no base URL,
// gives the PageMeta.Text of a pass from a page's URL with Options.Meta,
// and that a pass with PageMeta.NoText leaves
// Text nil and the rest of the PageMeta as it is without. It is seeded
// with scanCases, FuzzExtract's corpus and the synthetic page.
func FuzzVisibleText(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c), "")
	}
	for _, b := range corpusBodies(f, filepath.Join("testdata", "fuzz", "FuzzExtract")) {
		f.Add(b, "")
	}
	f.Add([]byte("<title>T</title><title>U</title><p>Grüße <script/>x<style>y</style> z</p><b>b</b>"), "")
	f.Add([]byte("<meta charset=windows-1252><title>\xe9</title><li>\xe9t\xe9&amp;&#233;</li>"), "")
	f.Add([]byte("<p>\xe9t\xe9</p>"), "text/html; charset=iso-8859-1")
	if synth, err := os.ReadFile("testdata/synthetic-page.html"); err == nil {
		f.Add(synth, "text/html")
	}
	base, err := urlx.Parse(testBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		h := contentTypeHeader(contentType)
		var m, skip PageMeta
		res := HTML(base, h, body, Options{Meta: &m})
		if got := VisibleText(contentType, body); !bytes.Equal(got, m.Text) {
			t.Fatalf("VisibleText %q, PageMeta.Text %q", got, m.Text)
		}
		skip.NoText = true
		skipRes := HTML(base, h, body, Options{Meta: &skip})
		if skip.Text != nil || !skip.NoText {
			t.Fatalf("NoText: Text %q, NoText %v", skip.Text, skip.NoText)
		}
		m.Text, m.NoText = nil, true
		if !reflect.DeepEqual(exportedMeta(m), exportedMeta(skip)) || !reflect.DeepEqual(res, skipRes) {
			t.Fatalf("NoText changed the pass:\n%+v\n%+v", m, skip)
		}
	})
}

// exportedMeta is m without its unexported fields.
func exportedMeta(m PageMeta) PageMeta {
	return PageMeta{Base: m.Base, Metas: m.Metas, LinkTags: m.LinkTags, Scripts: m.Scripts, Links: m.Links,
		Dropped: m.Dropped, Text: m.Text, NoText: m.NoText}
}
