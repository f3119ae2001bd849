package urlx

import (
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// TestResolveEncoded checks the query of links on pages in legacy
// encodings, as the URL Standard encodes it (the expected bytes are the
// encodings' own, written out): the path stays UTF-8, the query is in the
// page's encoding, a character the encoding lacks is "&#N;" percent-encoded,
// and the fragment is dropped as always.
func TestResolveEncoded(t *testing.T) {
	base, err := Parse("http://legacy.test/dir/page.html")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		enc       encoding.Encoding
		ref, want string
	}{
		{charmap.Windows1252, "/caf\u00e9?q=caf\u00e9&e=\u20ac&s=\u2603#fr\u00e9", "http://legacy.test/caf%C3%A9?q=caf%E9&e=%80&s=%26%239731%3B"},
		{charmap.ISO8859_2, "s?q=\u017elu\u0165ou\u010dk\u00fd&x=\u00e6", "http://legacy.test/dir/s?q=%BElu%BBou%E8k%FD&x=%26%23230%3B"},
		{japanese.ShiftJIS, "/\u65e5\u672c?q=\u65e5\u672c", "http://legacy.test/%E6%97%A5%E6%9C%AC?q=%93%FA%96{"},
		{japanese.ShiftJIS, "?q=\u8868&x=\U0001F600", "http://legacy.test/dir/page.html?q=%95\\&x=%26%23128512%3B"},
		{korean.EUCKR, "?q=\ud55c\uad6d\uc5b4", "http://legacy.test/dir/page.html?q=%C7%D1%B1%B9%BE%EE"},
		{simplifiedchinese.GB18030, "?q=\u4e2d\u6587&e=\u20ac&x=\U0001F600", "http://legacy.test/dir/page.html?q=%D6%D0%CE%C4&e=%A2%E3&x=%949%FC6"},
		{charmap.Windows1252, "?q=plain&r=%C3%A9", "http://legacy.test/dir/page.html?q=plain&r=%C3%A9"}, // ASCII: as it is
		{nil, "?q=caf\u00e9", "http://legacy.test/dir/page.html?q=caf%C3%A9"},                           // UTF-8
	}
	html1252, err := htmlindex.Get("windows-1252") // writes "&#N;" where charmap's fails
	if err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		enc       encoding.Encoding
		ref, want string
	}{html1252, "?s=\u2603\u00e9", "http://legacy.test/dir/page.html?s=%26%239731%3B%E9"})
	for _, tc := range tests {
		u, err := base.ResolveEncoded(tc.ref, NewQueryEncoder(tc.enc))
		if err != nil || u.String() != tc.want {
			t.Errorf("%v %q: %s, %v; want %s", tc.enc, tc.ref, u, err, tc.want)
		}
	}
}
