package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterLiveSettingChange changes --host-delay mid-crawl through one
// agent's console (PATCH /api/v1/config): the gaps in the web's request
// log between requests to one host grow to the new delay for hosts fetched
// by every agent, not only by the one asked. An invalid value is refused
// with its reason and changes nothing.
func TestClusterLiveSettingChange(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay, newDelay = 40 * time.Millisecond, 10 * time.Millisecond, 300 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 25, Seed: 29,
		FirstIP: netip.MustParseAddr("127.61.16.1")})
	c := newClusterRun(t, web, "127.213.16.1", 2)
	console := freeAddr(t)
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "2")
	c.start(t, c.agents[0], append(flags, "--console-addr", console)...)
	c.start(t, c.agents[1], flags...)
	c.agents[0].waitFor(t, "view epoch ", 20*time.Second)
	for len(web.web.Hits()) < 30 {
		time.Sleep(10 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(c.agents[0].dir, "state", "console.token"))
	if err != nil {
		t.Fatal(err)
	}
	patch := func(body map[string]any) (int, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPatch, "http://"+console+"/api/v1/config", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := patch(map[string]any{"host-delay": "-1s"}); code != http.StatusBadRequest || !strings.Contains(body, "host-delay") {
		t.Errorf("PATCH of an invalid host-delay: %d %s, want 400 naming the setting", code, body)
	}
	if code, body := patch(map[string]any{"host-delay": newDelay.String()}); code != http.StatusOK {
		t.Fatalf("PATCH host-delay: %d %s", code, body)
	}
	changed := time.Now()
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
		s, err := cluster.LoadConfigState(filepath.Join(a.dir, "state", "cluster"))
		if err != nil || s.Epoch == 0 || s.Values["host-delay"] != newDelay.String() {
			t.Errorf("agent %s: config saved %+v, %v; want host-delay %s", a.name, s, err, newDelay)
		}
	}
	c.judge(t, hostDelay, ipDelay, 1)

	// Gaps between requests to one host that began after the change:
	// each at least the new delay, and some of them on every agent's
	// addresses.
	v := viewOf(t, c.agents[0].name, c.agents[1].name)
	byHost := map[string][]testweb.Hit{}
	for _, h := range web.web.Hits() {
		byHost[h.Host] = append(byHost[h.Host], h)
	}
	after := map[string]int{}
	before := 0
	for host, hits := range byHost {
		slices.SortFunc(hits, func(a, b testweb.Hit) int { return a.Start.Compare(b.Start) })
		for i := 1; i < len(hits); i++ {
			gap := hits[i].Start.Sub(hits[i-1].End)
			switch {
			case hits[i-1].End.After(changed):
				after[v.Owner("ip:"+hits[i].IP.String())]++
				if gap < newDelay-clusterTolerance && !hits[i-1].Cut {
					t.Errorf("host %s: %s between requests after the change to %s", host, gap, newDelay)
				}
			case hits[i].Start.Before(changed) && gap < newDelay/2:
				before++
			}
		}
	}
	t.Logf("gaps after the change by address owner: %v; %d gaps before it shorter than half the new delay", after, before)
	if before == 0 {
		t.Error("no gap before the change was shorter than the new delay: the test shows nothing")
	}
	for _, a := range c.agents {
		if after[a.name] == 0 {
			t.Errorf("no request to a host of %s's addresses after the change", a.name)
		}
	}
}
