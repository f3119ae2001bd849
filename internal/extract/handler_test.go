package extract

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// docInParse returns the Doc an Extractor gives as the TokenHandler of a
// pass of parse.HTML (with parse.Options.Meta too) over page.
func docInParse(t testing.TB, e *Extractor, page []byte, contentType string) (Doc, error) {
	base, err := urlx.Parse("https://example.com/a/b")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	var meta parse.PageMeta
	parse.HTML(base, h, page, parse.Options{Embeds: true, JSLiterals: true, Meta: &meta, MaxText: 1 << 10, Tokens: e})
	if !e.Walked() {
		t.Fatal("the pass did not hand the page to the Extractor")
	}
	return e.Doc()
}

// FuzzTokenHandler: an Extractor walking a page within parse.HTML gives
// the Doc and error that MainText gives, whatever page it walked before.
func FuzzTokenHandler(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.html")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, "", []byte("<p>before</p>"))
		}
	}
	for _, p := range realPages(f, 3) {
		f.Add(p, "text/html; charset=utf-8", []byte{})
	}
	f.Add([]byte("<title>x</title><p>caf\xe9 &amp; cr\r\nlf</p><pre>a\r\n b</pre>"), "text/html; charset=windows-1252", []byte("<h1>t</h1>"))
	f.Fuzz(func(t *testing.T, page []byte, contentType string, before []byte) {
		want, wantErr := MainText(page, contentType)
		var e Extractor
		_, _ = docInParse(t, &e, before, "")
		got, err := docInParse(t, &e, page, contentType)
		if err != wantErr || !reflect.DeepEqual(got, want) {
			t.Fatalf("in parse.HTML: %+v, %v\nMainText: %+v, %v", got, err, want, wantErr)
		}
		if e.Walked() {
			t.Fatal("Walked after Doc")
		}
	})
}
