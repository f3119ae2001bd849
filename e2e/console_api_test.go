package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestConsoleAPI drives a crawl of the synthetic web through its console:
// every call with and without the token, the Host check, the login and
// the event stream's ticket; a pause seen in the server's request log (no
// request starts while paused but those already under way); resume; a
// clean stop through the API, then the same command resumes and finishes
// the crawl with every page fetched exactly once.
func TestConsoleAPI(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	r := startWeb(t, testweb.Config{Hosts: 16, HostsPerIP: 4, PagesPerHost: 200, Seed: 5, FirstIP: netip.MustParseAddr("127.63.0.1")})
	flags := []string{"--host-delay", "60ms", "--ip-delay", "20ms", "--fetchers", "32", "--retry-delay", "100ms"}
	c := startConsoleCrawl(t, r, flags...)

	fi, err := os.Stat(filepath.Join(c.dir, "state", "console.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi.Mode())
	}

	t.Run("host-check", func(t *testing.T) {
		for _, path := range []string{"/", "/api/v1/status"} {
			req, _ := http.NewRequest("GET", c.base+path, nil)
			req.Host = "rebound.example:80"
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s with a foreign Host: %d, want 403", path, resp.StatusCode)
			}
		}
	})

	t.Run("page", func(t *testing.T) {
		for _, path := range []string{"/", "/app.js", "/app.css"} {
			code, b := c.call(t, "GET", path, nil, false)
			if code != 200 {
				t.Errorf("GET %s: %d", path, code)
			}
			if strings.Contains(string(b), c.token) {
				t.Errorf("GET %s holds the token", path)
			}
		}
	})

	t.Run("without-token", func(t *testing.T) {
		// Reads need no token on loopback; every change does, and is not
		// applied without it.
		reads := []string{"/api/v1/status", "/api/v1/config", "/api/v1/hosts?sort=queued&limit=5",
			"/api/v1/reports/status", "/api/v1/reports/mime", "/api/v1/reports/seeds", "/api/v1/reports/cuts",
			"/api/v1/reports/hosts", "/api/v1/log?tail=5", "/api/v1/why?url=" + r.web.NormalSeeds()[0]}
		for _, p := range reads {
			if code, b := c.call(t, "GET", p, nil, false); code != 200 {
				t.Errorf("GET %s without the token on loopback: %d %s", p, code, b)
			}
		}
		writes := []struct {
			method, path string
			body         any
		}{
			{"POST", "/api/v1/pause", nil}, {"POST", "/api/v1/resume", nil}, {"POST", "/api/v1/checkpoint", nil},
			{"POST", "/api/v1/stop", nil}, {"POST", "/api/v1/seeds", map[string]any{"urls": []string{"http://new.test/"}}},
			{"PATCH", "/api/v1/config", map[string]any{"host-delay": "1s"}},
			{"POST", "/api/v1/blocklist", map[string]any{"entries": []string{"127.63.0.1"}}},
			{"POST", "/api/v1/ticket", nil},
		}
		// The crawl takes a checkpoint as it starts; wait for it, so that
		// only a refused call could add one.
		cps := c.status(t)["totals"].(map[string]any)["checkpoints"]
		for deadline := time.Now().Add(30 * time.Second); cps == 0.0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			cps = c.status(t)["totals"].(map[string]any)["checkpoints"]
		}
		if cps == 0.0 {
			t.Fatal("no checkpoint 30 s after the start")
		}
		for _, w := range writes {
			if code, b := c.call(t, w.method, w.path, w.body, false); code != http.StatusUnauthorized {
				t.Errorf("%s %s without the token: %d %s, want 401", w.method, w.path, code, b)
			}
		}
		st := c.status(t)
		if st["state"] != "running" {
			t.Errorf("after refused calls the crawl is %v", st["state"])
		}
		if got := c.settings(t)["host-delay"]; got != "60ms" {
			t.Errorf("host-delay after a refused PATCH: %v", got)
		}
		if got := st["totals"].(map[string]any)["checkpoints"]; got != cps {
			t.Errorf("checkpoints went from %v to %v after a refused call", cps, got)
		}
		if n := st["counters"].(map[string]any)["ConsoleRefused"].(float64); n < float64(len(writes)) {
			t.Errorf("ConsoleRefused = %v after %d refused calls", n, len(writes))
		}
		if n := st["counters"].(map[string]any)["Blocked"]; n != 0.0 {
			t.Errorf("Blocked = %v after a refused blocklist call", n)
		}
	})

	t.Run("login", func(t *testing.T) {
		if code, _ := c.call(t, "POST", "/api/v1/login", map[string]string{"token": "wrong"}, false); code != 401 {
			t.Errorf("login with a wrong token: %d", code)
		}
		code := strings.TrimPrefix(c.login[strings.Index(c.login, "#code="):], "#code=")
		if st, b := c.call(t, "POST", "/api/v1/login", map[string]string{"code": code}, false); st != 200 || !strings.Contains(string(b), c.token) {
			t.Errorf("login with the one-time code: %d %s", st, b)
		}
		if st, _ := c.call(t, "POST", "/api/v1/login", map[string]string{"code": code}, false); st != 401 {
			t.Errorf("second use of the one-time code: %d, want 401", st)
		}
	})

	t.Run("event-stream", func(t *testing.T) {
		var tk struct{ Ticket string }
		json.Unmarshal(c.must(t, "POST", "/api/v1/ticket", nil), &tk)
		if code, _ := c.call(t, "GET", "/api/v1/log?follow=1&ticket=not-a-ticket", nil, false); code != 401 {
			t.Errorf("stream with a bad ticket: %d", code)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/log?follow=1&tail=3&ticket="+tk.Ticket, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(resp.Body)
		events := 0
		for events < 1 && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events++
			}
		}
		resp.Body.Close()
		if events < 1 {
			t.Errorf("%d events from the crawl log stream", events)
		}
		if code, _ := c.call(t, "GET", "/api/v1/log?follow=1&ticket="+tk.Ticket, nil, false); code != 401 {
			t.Errorf("second use of a ticket: %d, want 401", code)
		}
	})

	t.Run("reports-text", func(t *testing.T) {
		for deadline := time.Now().Add(20 * time.Second); pages(c.status(t)) < 20 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		for _, name := range []string{"hosts", "status", "mime", "seeds", "cuts"} {
			code, b := c.call(t, "GET", "/api/v1/reports/"+name+"?format=text", nil, false)
			if code != 200 || len(strings.Split(strings.TrimSpace(string(b)), "\n")) < 2 {
				t.Errorf("report %s as text: %d\n%s", name, code, b)
			}
		}
	})

	t.Run("pause", func(t *testing.T) {
		c.must(t, "POST", "/api/v1/pause", nil)
		paused := time.Now()
		time.Sleep(1500 * time.Millisecond)
		resumeAt := time.Now()
		c.must(t, "POST", "/api/v1/resume", nil)
		// A request whose fetch had begun before the pause may reach the
		// server a little later (its connection was being set up).
		const underWay = 250 * time.Millisecond
		var during, before, after int
		deadline := time.Now().Add(20 * time.Second)
		for after == 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			during, before, after = 0, 0, 0
			for _, h := range r.web.Hits() {
				switch {
				case h.Start.Before(paused):
					before++
				case h.Start.Before(paused.Add(underWay)):
				case h.Start.Before(resumeAt):
					during++
					if during <= 3 {
						t.Errorf("request %s %s started %v after the pause", h.Host, h.Path, h.Start.Sub(paused))
					}
				default:
					after++
				}
			}
		}
		if before == 0 || after == 0 {
			t.Errorf("requests before the pause %d, after the resume %d: want some of each", before, after)
		}
		if during > 0 {
			t.Errorf("%d requests started while paused", during)
		}
	})

	t.Run("patch-config", func(t *testing.T) {
		// Refused changes change nothing.
		for _, bad := range []map[string]any{{"host-delay": "fast"}, {"dir": "/elsewhere"}, {"no-such-setting": 1},
			{"host-delay": "500ms", "fetchers": -3}} {
			code, b := c.call(t, "PATCH", "/api/v1/config", bad, true)
			if code != http.StatusBadRequest || !strings.Contains(string(b), "error") {
				t.Errorf("PATCH %v: %d %s, want 400 with the reason", bad, code, b)
			}
		}
		if got := c.settings(t)["host-delay"]; got != "60ms" {
			t.Fatalf("host-delay after refused changes: %v", got)
		}
		// A longer delay shows in the gaps between requests to each host.
		const longer = 400 * time.Millisecond
		c.must(t, "PATCH", "/api/v1/config", map[string]any{"host-delay": longer.String()})
		changed := time.Now()
		if got := c.settings(t)["host-delay"]; got != longer.String() {
			t.Fatalf("host-delay after PATCH: %v", got)
		}
		time.Sleep(2 * time.Second)
		// Lowered back, the delay shortens the waits in progress at once:
		// requests that start before the PATCH is sent are judged.
		restored := time.Now()
		c.must(t, "PATCH", "/api/v1/config", map[string]any{"host-delay": "60ms"})
		byHost := map[string][]testweb.Hit{}
		for _, h := range r.web.Hits() {
			byHost[h.Host] = append(byHost[h.Host], h)
		}
		after, short := 0, 0
		for host, hs := range byHost {
			sort.Slice(hs, func(i, j int) bool { return hs[i].Start.Before(hs[j].Start) })
			for i := 1; i < len(hs); i++ {
				prev, cur := hs[i-1], hs[i]
				gap := cur.Start.Sub(prev.End)
				switch {
				case prev.End.After(changed) && cur.Start.Before(restored):
					after++
					if gap < longer-tolerance {
						t.Errorf("host %s: %s started %v after the previous response, with host-delay %v", host, cur.Path, gap, longer)
					}
				case cur.Start.Before(changed) && gap < longer/2:
					short++
				}
			}
		}
		if after < 5 || short < 5 {
			t.Errorf("%d gaps under the longer delay, %d short gaps before it: want several of each", after, short)
		}
	})

	t.Run("stop-and-resume", func(t *testing.T) {
		// A host blocklisted before the stop stays blocked after the
		// resume (state/blocklist.json): none of its requests starts
		// after it was blocked, in either run.
		var top []struct{ Host string }
		json.Unmarshal(c.must(t, "GET", "/api/v1/hosts?sort=queued&limit=1", nil), &top)
		if len(top) == 0 {
			t.Fatal("no host holds URLs before the stop")
		}
		victim := keyHost(top[0].Host)
		c.must(t, "POST", "/api/v1/blocklist", map[string]any{"entries": []string{victim}})
		blockedAt := time.Now()
		c.must(t, "POST", "/api/v1/stop", nil)
		if err := c.wait(t, time.Minute); err != nil {
			t.Fatalf("crawl after POST /stop: %v\n%s", err, c.log())
		}
		stoppedAt := len(r.web.Hits())
		c.start(t, flags...)
		if err := c.wait(t, 2*time.Minute); err != nil {
			t.Fatalf("resumed crawl: %v\n%s", err, c.log())
		}
		expected := map[string]bool{}
		for _, u := range r.web.Expected() {
			expected[urlKey(t, u)] = true
		}
		if stoppedAt >= len(expected) {
			t.Fatalf("everything was fetched before the stop (%d requests): the test proves nothing", stoppedAt)
		}
		seen := map[string]int{}
		for _, h := range r.web.Hits() {
			if h.Path != "/robots.txt" {
				seen[key(h.Host, h.Path)]++
			}
		}
		for _, h := range r.web.Hits() {
			if h.Host == victim && h.Start.After(blockedAt.Add(250*time.Millisecond)) {
				t.Errorf("blocklisted %s: request %s started %v after it was blocked", victim, h.Path, h.Start.Sub(blockedAt))
			}
		}
		for k := range expected {
			if seen[k] != 1 && !(seen[k] == 0 && strings.HasPrefix(k, victim+" ")) {
				t.Errorf("%s fetched %d times over the two runs, want 1", k, seen[k])
			}
		}
		if !strings.Contains(c.log(), "crawl finished") {
			t.Errorf("no summary:\n%s", c.log())
		}
	})
}
