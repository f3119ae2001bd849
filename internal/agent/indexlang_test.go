package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestIndexRebuildLanguages crawls with --languages, then makes the
// crawl's CDXJ indexes again from its WARC files: with PageLanguages the
// merged index is the crawl's byte for byte, languages fields included;
// without, it has none.
func TestIndexRebuildLanguages(t *testing.T) {
	c := newTestCrawl(t, "127.61.5.1", 2, 15, func(cfg *Config, w *testweb.Web) {
		cfg.Store.Languages, cfg.Store.Index = true, true
	})
	c.run(t)
	merged := store.MergedIndex(c.cfg.Dir)
	crawled, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(crawled, []byte(`"languages":`)) {
		t.Fatal("the crawl's index has no languages field")
	}
	for _, o := range []store.IndexOptions{{Languages: PageLanguages{}}, {}} {
		idx, _ := filepath.Glob(filepath.Join(c.cfg.Dir, "warc", "*.cdxj"))
		for _, p := range append(idx, merged) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.IndexCrawl(c.cfg.Dir, o); err != nil {
			t.Fatal(err)
		}
		rebuilt, err := os.ReadFile(merged)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case o.Languages != nil && !bytes.Equal(rebuilt, crawled):
			t.Errorf("rebuilt with languages:\n%s\nthe crawl's:\n%s", rebuilt, crawled)
		case o.Languages == nil && (bytes.Contains(rebuilt, []byte(`"languages":`)) || len(rebuilt) == 0):
			t.Errorf("rebuilt without languages:\n%s", rebuilt)
		}
	}
}
