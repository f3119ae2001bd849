package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// chromium returns the path of the browser, or skips the test saying how
// to install it (fails instead when PETREL_REQUIRE_BROWSER=1).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is not installed and PETREL_REQUIRE_BROWSER=1")
	}
	t.Skip("needs a browser: apt-get install -y chromium")
	return ""
}

// browser starts a headless chromium with a window of w×h and collects
// what the pages write to their console.
func browser(t *testing.T, w, h int) (context.Context, func() []chromedp.ConsoleMessage) {
	t.Helper()
	path := chromium(t)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.WindowSize(w, h), chromedp.UserDataDir(t.TempDir()))
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	messages := chromedp.Console(ctx)
	var mu sync.Mutex
	var got []chromedp.ConsoleMessage
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
		}
	}()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx, func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]chromedp.ConsoleMessage(nil), got...)
	}
}

// TestConsoleInBrowser opens the web console during a crawl of the
// synthetic web: the page counter moves, pause and resume act on the
// crawl, a setting changes on the settings page, "why" answers; no JavaScript error and no
// horizontal scrolling at 1280×800 and 390×844. With
// PETREL_SCREENSHOTS=DIR it saves the screenshots there.
func TestConsoleInBrowser(t *testing.T) {
	chromium(t)
	pages := 300
	if os.Getenv("PETREL_SCREENSHOTS") != "" {
		pages = 2000 // a crawl that lasts past the screenshots
	}
	r := startWeb(t, testweb.Config{Hosts: 16, HostsPerIP: 4, PagesPerHost: pages, Seed: 11, FirstIP: netip.MustParseAddr("127.62.0.1")})
	c := startConsoleCrawl(t, r, "--host-delay", "150ms", "--ip-delay", "50ms", "--fetchers", "32", "--revisit")
	ctx, consoleMessages := browser(t, 1280, 800)

	// The one-time link logs the browser in.
	run(t, ctx, chromedp.Navigate(c.login))
	poll(t, ctx, `sessionStorage.getItem("petrel-token") !== null && document.querySelector("#btn-login").textContent === "Log out"`)
	if strings.Contains(c.login, c.token) {
		t.Fatal("the login link holds the token")
	}

	// The page counter moves.
	first := pageCounter(t, ctx)
	poll(t, ctx, fmt.Sprintf(`Number(document.querySelector("#k-pages").textContent.replace(/,/g, "")) > %d`, first))

	// Pause, then resume, with the buttons.
	run(t, ctx, chromedp.Click(chromedp.CSS("#btn-pause")))
	poll(t, ctx, `document.querySelector("#state").textContent === "paused"`)
	if st := c.status(t); st["state"] != "paused" {
		t.Fatalf("after the pause button the crawl is %v", st["state"])
	}
	run(t, ctx, chromedp.Click(chromedp.CSS("#btn-resume")))
	poll(t, ctx, `document.querySelector("#state").textContent === "running"`)

	// Ask why for a URL the crawl fetched, from the search box.
	// A revisit crawl: the overview shows its schedule once first fetches
	// are committed to it, and "why" says when a fetched page is due next.
	poll(t, ctx, `!document.querySelector("#revisit-panel").hidden &&
		Number(document.querySelector("#revisits dd").textContent.replace(/,/g, "")) > 0`)

	seed := r.web.NormalSeeds()[0]
	run(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector("#why-quick-url").value = %q;
		document.querySelector("#why-quick").requestSubmit(); })()`, seed)))
	state := pollValue[string](t, ctx, `document.querySelector("#why-state") && document.querySelector("#why-state").textContent`)
	if !strings.HasPrefix(state, "fetched") {
		t.Errorf("why %s in the page: %q, want fetched", seed, state)
	}
	if text := pollValue[string](t, ctx, `document.querySelector("#tab-why").textContent`); !strings.Contains(text, "revisit interval") {
		t.Errorf("why %s in the page says nothing of its revisit schedule: %q", seed, text)
	}

	// The settings page marks the cluster-wide settings, as
	// /config?describe=1 does.
	consoleClusterWide(t, ctx, c)

	// Every tab at both sizes: no horizontal scrolling.
	shots := os.Getenv("PETREL_SCREENSHOTS")
	if shots != "" {
		time.Sleep(75 * time.Second) // the charts of the screenshots get some history
	}
	for _, size := range [][2]int{{1280, 800}, {390, 844}} {
		run(t, ctx, chromedp.EmulateViewport(int64(size[0]), int64(size[1])))
		for _, tab := range []string{"overview", "hosts", "settings", "log", "why"} {
			run(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#`+tab+`"`))
			time.Sleep(2200 * time.Millisecond) // a refresh of the figures and the charts
			wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
			if err != nil {
				t.Fatal(err)
			}
			if !wide {
				t.Errorf("%d×%d %s: the page scrolls horizontally", size[0], size[1], tab)
			}
			if shots != "" {
				png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(shots, fmt.Sprintf("console-%s-%dx%d.png", tab, size[0], size[1]))
				if err := os.WriteFile(name, png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	for _, m := range consoleMessages() {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			t.Errorf("JavaScript %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
		}
	}
	c.must(t, "POST", "/api/v1/stop", nil)
	if err := c.wait(t, time.Minute); err != nil {
		t.Fatalf("crawl after stop: %v\n%s", err, c.log())
	}
}

// consoleClusterWide checks that the settings page marks exactly the
// settings /config?describe=1 says are cluster-wide.
func consoleClusterWide(t *testing.T, ctx context.Context, c *consoleCrawl) {
	t.Helper()
	var described []struct {
		Name        string `json:"name"`
		ClusterWide bool   `json:"cluster_wide"`
	}
	if err := json.Unmarshal(c.must(t, "GET", "/api/v1/config?describe=1", nil), &described); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range described {
		if s.ClusterWide {
			want = append(want, s.Name)
		}
	}
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#settings"`))
	poll(t, ctx, `document.querySelectorAll("#settings .setting").length > 0`)
	got := pollValue[[]string](t, ctx, `Array.from(document.querySelectorAll("#settings .setting.cluster-wide input"), i => i.name)`)
	sort.Strings(want)
	sort.Strings(got)
	if len(want) == 0 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("settings marked cluster-wide on the page: %v; /config?describe=1: %v", got, want)
	}
}

func run(t *testing.T, ctx context.Context, a chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// poll waits until the JavaScript expression is true.
func poll(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// pollValue waits until the expression is truthy and returns it.
func pollValue[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
	return v
}

func pageCounter(t *testing.T, ctx context.Context) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Number(document.querySelector("#k-pages").textContent.replace(/,/g, "")) || 0`))
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
