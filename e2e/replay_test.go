package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// replayTools finds headless Chromium and ReplayWeb.page's ui.js and sw.js
// (PETREL_REPLAYWEB_DIR, else the copy .ci/run unpacks under
// /opt/petrel-tools). Without them the test is skipped with a how-to, or
// fails when PETREL_REQUIRE_BROWSER=1.
func replayTools(t *testing.T) (chromium, replayDir string) {
	t.Helper()
	missing := func(what string) {
		msg := what + ": apt-get install chromium; npm pack replaywebpage@2.5.3 && tar xzf replaywebpage-2.5.3.tgz, then set PETREL_REPLAYWEB_DIR to its package/ directory (or run .ci/run)"
		if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing("chromium not found")
	}
	replayDir = os.Getenv("PETREL_REPLAYWEB_DIR")
	if replayDir == "" {
		replayDir = "/opt/petrel-tools/replaywebpage/package"
	}
	for _, f := range []string{"ui.js", "sw.js"} {
		if _, err := os.Stat(filepath.Join(replayDir, f)); err != nil {
			missing("ReplayWeb.page not found (" + err.Error() + ")")
		}
	}
	return chromium, replayDir
}

// serveReplay serves ReplayWeb.page under /replay/, each WACZ file (with
// Range support) at /NAME and, at /?wacz=NAME&url=U, a page embedding the
// replay of U from it. It returns the server's base URL.
func serveReplay(t *testing.T, replayDir string, waczs map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	for _, f := range []string{"ui.js", "sw.js"} {
		mux.HandleFunc("/replay/"+f, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/javascript")
			http.ServeFile(w, r, filepath.Join(replayDir, f))
		})
	}
	for name, path := range waczs {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			f, err := os.Open(path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			defer f.Close()
			w.Header().Set("Content-Type", "application/wacz+zip")
			http.ServeContent(w, r, name, time.Time{}, f) // Range requests answered
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><meta charset="utf-8"><script src="/replay/ui.js"></script></head><body>
<replay-web-page source="%s/%s" url="%s" replayBase="./replay/" embed="replayonly" style="display:block;width:1000px;height:700px"></replay-web-page>
</body></html>`, base, r.URL.Query().Get("wacz"), strings.ReplaceAll(r.URL.Query().Get("url"), `"`, "&quot;"))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// replayBrowser starts headless Chromium for the replay tests (without
// its sandbox when run as root) and returns its first tab's context,
// closed at the test's end.
func replayBrowser(t *testing.T, ctx context.Context, chromium string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// frameReport is what findFrames reports about one frame of the page.
type frameReport struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	Resources []struct {
		Name   string `json:"name"`
		Status int    `json:"status"`
	} `json:"resources"`
}

// findFrames walks every same-origin frame of the page, through shadow
// roots, and reports its URL, title and resource loads with their status.
const findFrames = `(() => {
  const out = [], seen = new Set();
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tagName !== "IFRAME") continue;
      let d, w;
      try { d = el.contentDocument; w = el.contentWindow; } catch (e) { continue; }
      if (!d || seen.has(d)) continue;
      seen.add(d);
      out.push({url: String(d.location.href), title: d.title || "",
        resources: w.performance.getEntriesByType("resource").map(e => ({name: e.name, status: e.responseStatus || 0}))});
      walk(d);
    }
  };
  walk(document);
  return JSON.stringify(out);
})()`

// TestReplayWACZ crawls the archive site, packages the crawl as a WACZ and
// replays each page (one a revisit record) in ReplayWeb.page in headless Chromium: the page's
// title appears in the replay frame, and the frame loaded every requisite
// (style sheet, script, image, the style sheet's background image) without
// a 404.
func TestReplayWACZ(t *testing.T) {
	chromium, replayDir := replayTools(t)
	s := startArchiveSite(t)
	dir := crawlArchiveSite(t, s)
	// The index as index.cdxj, and as index.cdx.gz blocks with index.idx.
	waczs := map[string]string{}
	for _, above := range []string{"50000", "-1"} {
		wacz := filepath.Join(t.TempDir(), "crawl"+above+".wacz")
		if out, errOut, code := petrelOut(t, "warc", "wacz", dir, "-o", wacz, "--index-blocks-above", above); code != 0 {
			t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
		}
		if out, errOut, code := petrelOut(t, "warc", "check", wacz); code != 0 {
			t.Fatalf("warc check: exit %d: %s%s", code, out, errOut)
		}
		waczs[filepath.Base(wacz)] = wacz
	}
	base := serveReplay(t, replayDir, waczs)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bctx := replayBrowser(t, ctx, chromium)

	requisites := []string{"/style.css", "/app.js", "/img/logo.png", "/img/bg.png"}
	for _, name := range []string{"crawl50000.wacz", "crawl-1.wacz"} {
		for _, path := range []string{"/", "/about.html", "/dup.html"} { // /dup.html is a revisit of /
			replayPage(t, bctx, name+" "+path, base+"/?wacz="+name+"&url="+s.url(path), s.url(path), archivePages[path], requisites)
		}
	}
}

// replayPage loads the replay page at url and waits for the frame
// replaying target, titled title, that loaded every requisite, none of
// them with a 404. A load that
// shows nothing after 15 s (the service worker's first start on a loaded
// machine) is tried once more.
func replayPage(t *testing.T, bctx context.Context, what, url, target, title string, requisites []string) *frameReport {
	t.Helper()
	start := time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	var frame *frameReport
	var last string
	reloaded := false
	for time.Since(start) < 35*time.Second && frame == nil {
		if !reloaded && time.Since(start) > 15*time.Second {
			reloaded = true
			t.Logf("%s: nothing replayed after 15 s, loading again", what)
			if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
				t.Fatalf("navigate: %v", err)
			}
		}
		js, err := chromedp.Run(bctx, chromedp.Evaluate[string](findFrames))
		if err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		last = js
		var frames []frameReport
		json.Unmarshal([]byte(js), &frames)
		for i := range frames {
			if f := &frames[i]; f.Title == title && strings.HasSuffix(f.URL, "_/"+target) && loadedAll(f, requisites) {
				frame = f
			}
		}
		if frame == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if frame == nil {
		t.Errorf("%s: no replay frame titled %q that loaded %v within 35 s; frames: %s", what, title, requisites, last)
		return nil
	}
	for _, r := range frame.Resources {
		if r.Status == 404 {
			t.Errorf("%s: requisite %s missing from the archive (404)", what, r.Name)
		}
	}
	t.Logf("%s replayed in %s: %q in %s", what, time.Since(start).Round(time.Millisecond), frame.Title, frame.URL)
	return frame
}

// loadedAll reports whether the frame loaded every path in paths (from the
// archive: the replayed URL ends with the original one).
func loadedAll(f *frameReport, paths []string) bool {
	for _, p := range paths {
		found := false
		for _, r := range f.Resources {
			if strings.HasSuffix(r.Name, p) && r.Status != 0 {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestReplayRequisitesSite crawls the requisites site of internal/testweb
// (every form of page requisite, a CDN host off scope, CSS imports) and
// replays each of its HTML pages from a WACZ: the title appears and no
// resource the replayed page loads is missing from the archive (404),
// except the one robots.txt forbids.
func TestReplayRequisitesSite(t *testing.T) {
	chromium, replayDir := replayTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web, err := testweb.StartRequisites(ctx, netip.MustParseAddr("127.47.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	tmp := t.TempDir()
	hosts, seeds, err := web.WriteFiles(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "crawl")
	if _, errOut, code := petrelOut(t, "crawl", "--dir", dir, "--hosts", hosts, "--seeds", seeds, "--allow-private",
		"--system-dns=false", "--host-delay", "5ms", "--ip-delay", "5ms", "--progress", "0"); code != 0 {
		t.Fatalf("petrel crawl: exit %d: %s", code, errOut)
	}
	wacz := filepath.Join(tmp, "req.wacz")
	if out, errOut, code := petrelOut(t, "warc", "wacz", dir, "-o", wacz); code != 0 {
		t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
	}
	base := serveReplay(t, replayDir, map[string]string{"req.wacz": wacz})
	bctx := replayBrowser(t, ctx, chromium)
	for _, p := range web.Pages() {
		if strings.Contains(p.URL, "other.req.test") {
			continue // off scope: linked, not crawled
		}
		frame := replayPage(t, bctx, p.URL, base+"/?wacz=req.wacz&url="+p.URL, p.URL, p.Title, nil)
		if frame == nil {
			continue
		}
		// Give the page's late loads (fonts, CSS images) a moment.
		time.Sleep(time.Second)
		js, _ := chromedp.Run(bctx, chromedp.Evaluate[string](findFrames))
		var frames []frameReport
		json.Unmarshal([]byte(js), &frames)
		loaded := 0
		for _, f := range frames {
			if f.URL != frame.URL {
				continue
			}
			for _, r := range f.Resources {
				if r.Status == 404 && !strings.Contains(r.Name, "/private/") {
					t.Errorf("%s: requisite %s missing from the archive (404)", p.URL, r.Name)
				}
				if r.Status == 200 {
					loaded++
				}
			}
		}
		if loaded == 0 {
			t.Errorf("%s: the replayed page loaded no requisite from the archive", p.URL)
		}
		t.Logf("%s: %d requisites replayed", p.URL, loaded)
	}
}
