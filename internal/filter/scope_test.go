package filter

import (
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func TestScope(t *testing.T) {
	seeds := []string{"http://www.example.co.uk/docs/intro.html", "https://b.test/"}
	cases := []struct {
		kind ScopeKind
		url  string
		want bool
	}{
		{ScopeAll, "http://anything.test/x", true},
		{ScopeHost, "https://www.example.co.uk/other", true},
		{ScopeHost, "http://example.co.uk/", false},
		{ScopeHost, "http://b.test/deep/page", true},
		{ScopeHost, "http://c.b.test/", false},
		{ScopeDomain, "http://shop.example.co.uk/", true},
		{ScopeDomain, "http://example.co.uk/", true},
		{ScopeDomain, "http://other.co.uk/", false},
		{ScopePrefix, "http://www.example.co.uk/docs/", true},
		{ScopePrefix, "https://www.example.co.uk/docs/a/b?q=1", true},
		{ScopePrefix, "http://www.example.co.uk/blog/", false},
		{ScopePrefix, "http://www.example.co.uk/docsx", false},
		{ScopePrefix, "http://b.test/anything", true},
		{ScopePrefix, "http://bb.test/", false},
	}
	scopes := map[ScopeKind]*Scope{}
	for _, k := range []ScopeKind{ScopeAll, ScopeHost, ScopeDomain, ScopePrefix} {
		s := NewScope(k)
		for _, raw := range seeds {
			u, err := urlx.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			s.AddSeed(u)
		}
		scopes[k] = s
	}
	for _, c := range cases {
		u, err := urlx.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := scopes[c.kind].Allows(u); got != c.want {
			t.Errorf("scope %s: Allows(%s) = %v, want %v", c.kind, c.url, got, c.want)
		}
	}
	if _, err := ParseScopeKind("galaxy"); err == nil {
		t.Error("ParseScopeKind accepted an unknown scope")
	}
}
