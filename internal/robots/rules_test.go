package robots

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"
)

// referenceMatch is RFC 9309's decision over rules in file order, written
// plainly: the longest matching pattern wins, Allow on a tie.
func referenceMatch(rules []robotsRule, pathQuery string) bool {
	if pathQuery == "" {
		pathQuery = "/"
	}
	if pathQuery == "/robots.txt" {
		return true
	}
	p := normalizePath(pathQuery)
	best, allowed := -1, true
	for _, r := range rules {
		if r.pattern == "" || !matchPattern(r.pattern, r.anchored, p) {
			continue
		}
		n := len(r.pattern)
		if r.anchored {
			n++
		}
		if n > best || n == best && r.allow {
			best, allowed = n, r.allow
		}
	}
	return allowed
}

// TestRulesGolden pins the flat form: stores keep it on disk.
func TestRulesGolden(t *testing.T) {
	body := "User-agent: *\nDisallow: /private/\nAllow: /private/ok$\nDisallow: /*.gif$\nDisallow: /private/\nCrawl-delay: 1.5\n"
	r := Parse([]byte(body), "petrel").Rules()
	b, _ := r.AppendBinary(nil)
	const want = "80dea0cb05" + // uvarint 1.5e9 ns
		"030b2f707269766174652f6f6b" + // Allow, anchored, "/private/ok"
		"00092f707269766174652f" + // Disallow "/private/" (its repeat dropped)
		"02062f2a2e676966" // Disallow, anchored, "/*.gif"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("flat form\n got %s\nwant %s", got, want)
	}
	back, err := FromBinary(b)
	if err != nil || back != r {
		t.Fatalf("FromBinary = %v, %v; want the same Rules", back, err)
	}
	if r.CrawlDelay() != 1500*time.Millisecond || r.Allowed("/private/x") || !r.Allowed("/private/ok") || r.Allowed("/a.gif") {
		t.Error("golden rules decide wrongly")
	}
	if ok, rule := r.Match("/private/ok"); !ok || rule != "Allow: /private/ok$" {
		t.Errorf("Match = %v %q", ok, rule)
	}
}

func TestRulesShared(t *testing.T) {
	a := Parse([]byte("User-agent: *\nDisallow: /private/\n"), "petrel").Rules()
	b := Parse([]byte("# other host\nuser-agent: *\n\ndisallow: /private/\n"), "petrel").Rules()
	if a != b {
		t.Error("equal rule sets are not one value")
	}
	if c := Parse([]byte("User-agent: *\nDisallow: /search\n"), "petrel").Rules(); c == a {
		t.Error("different rule sets are one value")
	}
	if Parse(nil, "petrel").Rules() != AllowAll || Parse([]byte("User-agent: *\nDisallow:\n"), "petrel").Rules() != AllowAll {
		t.Error("a file without rules is not AllowAll")
	}
	if a.Size() != len("\x00\x00\x09/private/") {
		t.Errorf("Size = %d", a.Size())
	}
}

func TestFromBinaryRefuses(t *testing.T) {
	for _, b := range []string{
		"\x80",                      // truncated delay
		"\x00\x04\x01/",             // unknown flag
		"\x00\x00\x05/ab",           // pattern cut short
		"\x00\x00\x00",              // empty pattern
		"\x00\x00\x02/a\x00\x03/ab", // not in deciding order
		"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", // delay out of range
	} {
		if _, err := FromBinary([]byte(b)); err == nil {
			t.Errorf("FromBinary(%q) accepted", b)
		}
	}
	if r, err := FromBinary([]byte{0}); err != nil || r != AllowAll {
		t.Errorf("FromBinary(0) = %v, %v", r, err)
	}
}

// FuzzRulesAgree checks that the compiled rules decide every path as the
// parsed rules do, and survive their flat form.
func FuzzRulesAgree(f *testing.F) {
	f.Add([]byte(rfc9309Example), "foobot", "/example/page.html")
	f.Add([]byte("User-agent: *\nDisallow: /*.php$\nAllow: /a%2F*b\nAllow: /a\nDisallow: /a\n"), "petrel", "/a")
	f.Add([]byte("user-agent: *\nallow: /p$\ndisallow: /p*\n"), "", "/p")
	f.Fuzz(func(t *testing.T, body []byte, agent, path string) {
		r, rules := parse(body, agent)
		if got, want := r.Allowed(path), referenceMatch(rules, path); got != want {
			t.Fatalf("Allowed(%q) = %v, reference %v", path, got, want)
		}
		b, _ := r.Rules().AppendBinary(nil)
		back, err := FromBinary(b)
		if err != nil || back != r.Rules() {
			t.Fatalf("FromBinary(%x) = %v", b, err)
		}
		if b2, _ := back.AppendBinary(nil); !bytes.Equal(b, b2) {
			t.Fatal("flat form changed")
		}
	})
}
