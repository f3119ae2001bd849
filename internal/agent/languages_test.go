package agent

import (
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestStoreByLanguage crawls with a store filter that keeps only the
// responses in which no language was identified: every page whose
// languages were found is counted and logged as not stored (its
// crawl.log line has both "nostore" and its lang: annotation), every
// other response is stored, and the links of the pages not stored are
// still followed.
func TestStoreByLanguage(t *testing.T) {
	c := newTestCrawl(t, "127.61.3.1", 2, 15, func(cfg *Config, w *testweb.Web) {
		cfg.Filter.StoreFilter = "LanguageIsOneOf(und)"
	})
	c.run(t)
	st := c.a.Stats()
	named, deep := 0, 0
	for _, l := range readCrawlLog(t, c.cfg.Dir) {
		if l.Status <= 0 || strings.HasSuffix(l.URL, "/robots.txt") {
			continue
		}
		langs := l.Languages()
		_, nostore := l.Annotation("nostore")
		_, stored := l.Annotation("warc")
		if langs != "" {
			named++
		}
		if (langs != "") != nostore || nostore == stored {
			t.Errorf("crawl.log line of %s: languages %q, nostore %v, stored %v", l.URL, langs, nostore, stored)
		}
		if strings.Count(l.HopPath, "L") >= 2 {
			deep++
		}
	}
	if named == 0 || int64(named) != st.FilteredStore.Load() {
		t.Errorf("%d pages with languages, %d kept out of the WARC files", named, st.FilteredStore.Load())
	}
	if deep == 0 {
		t.Error("no page two links from a seed fetched: the links of pages not stored were not followed")
	}
}

// TestTextHead cuts a body at a character boundary.
func TestTextHead(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abcdef", 4, "abcd"}, {"aéb", 2, "a"}, {"aéb", 3, "aé"}} {
		if got := string(textHead([]byte(c.s), c.n)); got != c.want {
			t.Errorf("textHead(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if !isPlainText("Text/Plain; charset=utf-8") || isPlainText("text/html") {
		t.Error("isPlainText")
	}
}
