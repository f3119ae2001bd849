package extract

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzClassWords: the one-walk matching of classWords finds in a value
// the lists of which bytes.Contains finds a word, appendLower lower-cases
// as bytes.ToLower does, and hasDisplayNone says what removing the spaces
// and searching says.
func FuzzClassWords(f *testing.F) {
	for _, s := range []string{"", "post-body", "Sidebar-widget", "nav menu", "x-ad-y", "COMMENTS",
		"com-", "İ", "\xff", "display: none", "DISPLAY : NONE", "displaydisplay:none", "color:red;display :none"} {
		f.Add(s)
	}
	lists := []struct {
		words string
		in    wordLists
	}{{positiveWords, inPositive}, {negativeWords, inNegative}, {unlikelyWords, inUnlikely}, {maybeWords, inMaybe}, {boilerRoles, inRoles}}
	f.Fuzz(func(t *testing.T, s string) {
		v := []byte(s)
		lower := bytes.ToLower(v)
		if got := appendLower([]byte("x"), v); !bytes.Equal(got[1:], lower) {
			t.Fatalf("appendLower(%q) = %q, want %q", s, got[1:], lower)
		}
		var want wordLists
		for _, l := range lists {
			for _, w := range strings.Fields(l.words) {
				if bytes.Contains(lower, []byte(w)) {
					want |= l.in
				}
			}
		}
		if got := classWords.lists(lower); got != want {
			t.Fatalf("lists(%q) = %b, want %b", lower, got, want)
		}
		wantNone := bytes.Contains(bytes.ReplaceAll(lower, []byte(" "), nil), []byte("display:none"))
		if got := hasDisplayNone(lower); got != wantNone {
			t.Fatalf("hasDisplayNone(%q) = %v, want %v", lower, got, wantNone)
		}
	})
}
