package agent

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/petrel-crawler/petrel/internal/crawllog"
)

// TestRedirectsNotFollowed: redirects to file:, gopher: and javascript:
// each leave a crawl.log line and a skipped.jsonl line naming the
// Location and why; a Location with control bytes, which makes the
// response malformed on every try, is fetched once, not retried.
func TestRedirectsNotFollowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.91.4.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := fmt.Sprintf("http://rd.test:%d", ln.Addr().(*net.TCPAddr).Port)
	targets := map[string]string{"/f": "file:///etc/passwd", "/g": "gopher://rd.test/1", "/j": "javascript:alert(1)"}
	var controlHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch loc, ok := targets[r.URL.Path]; {
		case ok:
			http.Redirect(w, r, loc, http.StatusFound)
		case r.URL.Path == "/c":
			controlHits.Add(1)
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Write([]byte("HTTP/1.1 301 Moved\r\nLocation: /a\x01b\r\nContent-Length: 0\r\n\r\n"))
				c.Close()
			}
		case r.URL.Path == "/":
			fmt.Fprint(w, `<a href="/f">f</a> <a href="/g">g</a> <a href="/j">j</a> <a href="/c">c</a>`)
		default:
			http.NotFound(w, r)
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.91.4.1 rd.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crawl := filepath.Join(dir, "crawl")
	smallCrawl(t, crawl, hosts, origin+"/", func(cfg *Config) { cfg.Frontier.MaxRetries = 2 })

	logged := map[string]crawllog.Line{}
	for _, l := range readCrawlLog(t, crawl) {
		logged[l.URL] = l
	}
	skipped := map[string]crawllog.Skip{}
	for _, s := range readSkipped(t, crawl) {
		skipped[s.URL] = s
	}
	for path, loc := range targets {
		l, ok := logged[loc]
		if reason, _ := l.Annotation("skip"); !ok || reason != string(crawllog.ReasonRule) || l.Via != origin+path || l.HopPath != "LR" {
			t.Errorf("redirect to %s: crawl.log line %+v (found %v), want a skip:rule line via %s, hop path LR", loc, l, ok, origin+path)
		}
		s, ok := skipped[loc]
		if !ok || s.Reason != crawllog.ReasonRule || s.Via != origin+path || !strings.Contains(s.Rule, "unsupported scheme") {
			t.Errorf("redirect to %s: skipped.jsonl %+v (found %v), want the rule saying the scheme", loc, s, ok)
		}
	}
	if n := controlHits.Load(); n != 1 {
		t.Errorf("the response with control bytes in Location was fetched %d times, want once (a retry meets it again)", n)
	}
}
