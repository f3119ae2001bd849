package parse

import (
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// FuzzExtract checks that HTML never panics and that every link it returns
// is an http(s) URL in normalised form, deduplicated, within the cap.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`<a href="/a">a</a><a href="b?c#d">b</a>`,
		`<base href="//other.example/x/"><a href=y>`,
		`<meta http-equiv=refresh content="0;url=/r"><meta name=robots content=noindex>`,
		`<iframe src="javascript:x"></iframe><frame src=/f>`,
		"<meta charset=shift_jis><a href=\"/\x93\xfa\">",
		"<a href=\"\xff\xfe\">",
		`<a href="&#0;&amp;&lt;">`,
		`<script><a href="/no"></script><style>`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`<a href="/x">`), "text/html; charset=windows-1252")
	base, err := urlx.Parse("http://www.example.com/dir/page.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		h := contentTypeHeader(contentType)
		const max = 50
		r := HTML(base, h, body, Options{MaxLinks: max})
		if len(r.Links) > max {
			t.Fatalf("%d links above the cap", len(r.Links))
		}
		seen := make(map[urlx.URL]bool)
		for _, l := range r.Links {
			if l.Scheme != "http" && l.Scheme != "https" {
				t.Fatalf("link %q: scheme %q", l, l.Scheme)
			}
			n, err := urlx.Normalize(l.String())
			if err != nil || n != l.String() {
				t.Fatalf("link %q is not normalised: %q, %v", l, n, err)
			}
			if seen[l] {
				t.Fatalf("duplicate link %q", l)
			}
			seen[l] = true
		}
		if r.NoFollow && len(r.Links) != 0 {
			t.Fatalf("NoFollow page returned %d links", len(r.Links))
		}
		if r.Charset == "" {
			t.Fatalf("no charset")
		}
	})
}
