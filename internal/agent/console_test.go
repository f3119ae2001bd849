package agent

import (
	"strings"
	"testing"
)

// TestAddSeedsRefusalsAreClear: a URL POST /seeds cannot take is refused in
// the crawl's words, as a seed on the command line is, not in the URL
// parser's.
func TestAddSeedsRefusalsAreClear(t *testing.T) {
	for raw, want := range map[string]string{
		"not a url":         `"not a url" holds whitespace`,
		"notaurl":           `"notaurl" is not an absolute URL: it lacks http:// or https://`,
		"ftp://a.test/file": `"ftp://a.test/file": only http and https URLs are crawled`,
		"http://[::1/":      `"http://[::1/" is not a valid URL (`,
	} {
		res := (&Agent{}).AddSeeds([]string{raw})
		if len(res) != 1 || res[0].Accepted || !strings.HasPrefix(res[0].Reason, want) {
			t.Errorf("AddSeeds(%q) = %+v, want refused with %q", raw, res, want)
		}
		if len(res) == 1 && strings.Contains(res[0].Reason, "Error:") {
			t.Errorf("AddSeeds(%q): the parser's wording: %q", raw, res[0].Reason)
		}
	}
}
