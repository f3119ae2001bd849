package urlx

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The web-platform-tests URL suites (url/resources/urltestdata.json and
// toascii.json, as of July 2026), kept in testdata. Petrel normalises
// beyond the URL Standard (no fragment, no user information, unreserved
// escapes decoded), so the tests compare what the standard and Petrel share:
// whether an http(s) URL parses, and its host.

// TestWPTURLTestData runs every http(s) case of urltestdata.json.
func TestWPTURLTestData(t *testing.T) {
	cases := wptCases(t, "testdata/wpt-urltestdata.json")
	n := 0
	for _, raw := range cases {
		var c struct {
			Input, Href, Hostname string
			Base                  *string
			Failure               bool
		}
		if json.Unmarshal(raw, &c) != nil { // a comment line
			continue
		}
		var (
			u   URL
			err error
		)
		if c.Base != nil && strings.HasPrefix(*c.Base, "http") {
			base, berr := Parse(*c.Base)
			if berr != nil {
				t.Fatalf("base %q: %v", *c.Base, berr)
			}
			u, err = base.Resolve(c.Input)
		} else {
			l := strings.ToLower(strings.TrimSpace(c.Input))
			if !strings.HasPrefix(l, "http:") && !strings.HasPrefix(l, "https:") {
				continue
			}
			u, err = Parse(c.Input)
		}
		if !c.Failure && !strings.HasPrefix(c.Href, "http:") && !strings.HasPrefix(c.Href, "https:") {
			continue // resolves to another scheme, which Petrel refuses
		}
		n++
		switch {
		case c.Failure && err == nil:
			t.Errorf("%q (base %v): parsed as %s, want failure", c.Input, c.Base != nil, u)
		case !c.Failure && err != nil:
			t.Errorf("%q: %v, want %s", c.Input, err, c.Href)
		case !c.Failure && u.Host != c.Hostname:
			t.Errorf("%q: host %q, want %q", c.Input, u.Host, c.Hostname)
		}
	}
	if n < 440 {
		t.Errorf("only %d http(s) cases", n)
	}
}

// TestWPTToASCII runs the cases of toascii.json that hold an "xn--" label,
// as the web-platform-tests do: each input as the host of https://INPUT/x.
// (Of the others, some differ: golang.org/x/net/idna implements an older
// Unicode version of UTS #46 than the URL Standard's.)
func TestWPTToASCII(t *testing.T) {
	cases := wptCases(t, "testdata/wpt-toascii.json")
	n := 0
	for _, raw := range cases {
		var c struct {
			Input  string
			Output *string
		}
		if json.Unmarshal(raw, &c) != nil || !strings.Contains(strings.ToLower(c.Input), "xn--") {
			continue
		}
		n++
		u, err := Parse("https://" + c.Input + "/x")
		switch {
		case c.Output == nil && err == nil:
			t.Errorf("%q: host %q, want failure", c.Input, u.Host)
		case c.Output != nil && err != nil:
			t.Errorf("%q: %v, want %q", c.Input, err, *c.Output)
		case c.Output != nil && u.Host != *c.Output:
			t.Errorf("%q: host %q, want %q", c.Input, u.Host, *c.Output)
		}
	}
	if n < 15 {
		t.Errorf("only %d cases with xn-- labels", n)
	}
}

// wptCases reads a web-platform-tests JSON file: a list of cases (objects)
// and comments (strings).
func wptCases(t *testing.T, file string) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []json.RawMessage
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}
