package agent

import (
	"path/filepath"
	"strings"
	"testing"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestFilterStages crawls with a filter at each of the five stages and
// checks each where it shows: in the server's request log (schedule,
// fetch), in the counters and skipped.jsonl (every stage), in the WARC
// files (store).
func TestFilterStages(t *testing.T) {
	c := newTestCrawl(t, "127.61.2.1", 4, 15, func(cfg *Config, w *testweb.Web) {
		cfg.Filter.ScheduleFilter = "not PathEndsWithOneOf(/p/3.html)"
		cfg.Filter.FetchFilter = "not PathEndsWithOneOf(/p/5.html)"
		cfg.Filter.ParseFilter = "not PathEndsWithOneOf(/p/7.html)"
		cfg.Filter.FollowFilter = "not PathEndsWithOneOf(/p/9.html)"
		cfg.Filter.StoreFilter = "not StatusCategory(4)"
	})
	c.run(t)
	st := c.a.Stats()
	requested := map[string]int{}
	for _, h := range c.web.Hits() {
		p, _, _ := strings.Cut(h.Path, "?")
		requested[p]++
	}
	if requested["/p/3.html"] > 0 || requested["/p/5.html"] > 0 {
		t.Errorf("/p/3.html requested %d times (schedule filter), /p/5.html %d times (fetch filter)", requested["/p/3.html"], requested["/p/5.html"])
	}
	if requested["/p/7.html"] == 0 || requested["/p/9.html"] == 0 || requested["/p/1.html"] == 0 {
		t.Fatalf("the crawl did not reach the pages the test needs: %v", requested)
	}
	bySkip := map[crawllog.Reason]map[string]bool{}
	for _, s := range readSkipped(t, c.cfg.Dir) {
		if bySkip[s.Reason] == nil {
			bySkip[s.Reason] = map[string]bool{}
		}
		bySkip[s.Reason][s.URL] = true
		if strings.HasPrefix(string(s.Reason), "filter-") && s.Rule == "" {
			t.Errorf("%+v: a filter refusal without the filter's text", s)
		}
	}
	paths := func(r crawllog.Reason) map[string]bool {
		out := map[string]bool{}
		for u := range bySkip[r] {
			pu, err := urlx.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			out[pu.Path()] = true
		}
		return out
	}
	for _, c := range []struct {
		reason crawllog.Reason
		path   string
		count  int64
	}{
		{crawllog.ReasonFilterSchedule, "/p/3.html", st.FilteredSchedule.Load()},
		{crawllog.ReasonFilterFetch, "/p/5.html", st.FilteredFetch.Load()},
		{crawllog.ReasonFilterParse, "/p/7.html", st.FilteredParse.Load()},
		{crawllog.ReasonFilterFollow, "/p/9.html", st.FilteredFollow.Load()},
	} {
		ps := paths(c.reason)
		if c.count == 0 || !ps[c.path] || len(ps) != 1 {
			t.Errorf("%s: counted %d, skipped.jsonl has the paths %v, want only %s", c.reason, c.count, ps, c.path)
		}
	}
	// Store: no 4xx response in the WARC files; crawl.log marks them.
	if st.Status4xx.Load() == 0 || st.FilteredStore.Load() != st.Status4xx.Load() {
		t.Errorf("%d 4xx pages, %d kept out of the WARC files", st.Status4xx.Load(), st.FilteredStore.Load())
	}
	for _, l := range readCrawlLog(t, c.cfg.Dir) {
		_, nostore := l.Annotation("nostore")
		if (l.Status >= 400 && l.Status < 500) != nostore {
			t.Errorf("crawl.log line %+v: status %d, nostore %v", l, l.Status, nostore)
		}
	}
	eachRecord(t, filepath.Join(c.cfg.Dir, "warc"), func(rec gowarc.WarcRecord) {
		if rec.Type() != gowarc.Response {
			return
		}
		if blk, ok := rec.Block().(gowarc.HttpResponseBlock); ok && blk.HttpStatusCode()/100 == 4 {
			t.Errorf("%s: a %d response stored despite the store filter", rec.WarcHeader().Get(gowarc.WarcTargetURI), blk.HttpStatusCode())
		}
	})
	if n := len(bySkip[crawllog.ReasonFilterStore]); n == 0 || int64(n) > st.FilteredStore.Load() {
		t.Errorf("%d store refusals in skipped.jsonl, %d counted", n, st.FilteredStore.Load())
	}
}
