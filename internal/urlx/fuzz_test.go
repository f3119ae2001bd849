package urlx

import (
	"strings"
	"testing"
)

// FuzzNormalize checks that normalisation is idempotent, that its result
// re-parses to the same URL, and that the fast path agrees with the WHATWG
// path whenever it accepts an input, both for absolute parsing and for
// resolution against a base.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com/a/../b?c#d", "HTTPS://Ex.COM:443", "http://[::1]:80/%7e", "//h.test/x",
		"../a b", "?q=%zz", "http://Bücher.example/", "http://0x7f.1/", "\\\\a\\b",
	} {
		f.Add(s)
	}
	base, err := Parse("http://base.example/d1/d2/p?x")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		check := func(u URL) {
			s := u.String()
			if !strings.HasPrefix(u.PathQuery, "/") {
				t.Fatalf("%q: PathQuery %q does not start with /", raw, u.PathQuery)
			}
			v, err := Parse(s)
			if err != nil {
				t.Fatalf("%.200q normalised to %.200q, which does not re-parse: %v", raw, s, err)
			}
			if v != u {
				t.Fatalf("not idempotent: %q -> %q -> %q", raw, s, v.String())
			}
			if ss, ok := fastParse(nil, s); ok && ss != u {
				t.Fatalf("fast path re-parse of %q gives %q", s, ss.String())
			}
		}
		for _, b := range []*URL{nil, &base} {
			var (
				u   URL
				err error
			)
			if b == nil {
				u, err = Parse(raw)
			} else {
				u, err = b.Resolve(raw)
			}
			slow, serr := parseRef(b, raw, false)
			if (err == nil) != (serr == nil) {
				t.Fatalf("%q (base %v): fast/slow disagree on errors: %v vs %v", raw, b != nil, err, serr)
			}
			if err != nil {
				continue
			}
			if u != slow {
				t.Fatalf("%q (base %v): fast %q, slow %q", raw, b != nil, u.String(), slow.String())
			}
			check(u)
		}
	})
}
