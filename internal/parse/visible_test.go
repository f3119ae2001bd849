package parse

import (
	"bytes"
	"net/http"
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
