package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterWhy runs a crawl of two agents, each with a console, and asks
// both consoles "why" for the same URLs: the fetched seed of every host, a
// URL queued at the agent fetching from its address, a URL never seen.
// Both agents give the same answer, which names the agent that fetches
// from the URL's address (for a seed whose key another agent owns, through
// that agent). Then a blocklist entry added through one console is saved
// by both agents, why names it on the other, and none of the host's
// requests starts afterwards; a POST /stop to one agent is its leave.
func TestClusterWhy(t *testing.T) {
	web := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 40, Seed: 31,
		FirstIP: netip.MustParseAddr("127.61.5.1")})
	c := newClusterRun(t, web, "127.213.5.1", 2)
	consoles := []string{freeAddr(t), freeAddr(t)}
	flags := append(c.flags(150*time.Millisecond, 10*time.Millisecond), "--cluster-wait", "2")
	for i, a := range c.agents {
		c.start(t, a, append(flags, "--console-addr", consoles[i])...)
	}
	for _, a := range c.agents {
		a.waitFor(t, "view epoch ", 20*time.Second)
	}
	for len(web.web.Hits()) < 24 {
		time.Sleep(10 * time.Millisecond)
	}
	type answer struct {
		State, Rule, Detail, Source string
	}
	ask := func(i int, u string) answer {
		t.Helper()
		resp, err := http.Get("http://" + consoles[i] + "/api/v1/why?url=" + url.QueryEscape(u))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var w answer
		if resp.StatusCode != 200 || json.Unmarshal(b, &w) != nil {
			t.Fatalf("why %s on %s: %s %s", u, c.agents[i].name, resp.Status, b)
		}
		return w
	}
	v := viewOf(t, c.agents[0].name, c.agents[1].name)
	ipOwner := map[string]string{} // host → the agent fetching from its address
	for _, h := range web.web.Hits() {
		ipOwner[h.Host] = v.Owner("ip:" + h.IP.String())
	}

	through := 0
	for _, seed := range web.web.NormalSeeds() {
		su, _ := url.Parse(seed)
		fetcher, ok := ipOwner[su.Hostname()]
		if !ok {
			continue // not fetched yet
		}
		a0, a1 := ask(0, seed), ask(1, seed)
		if a0.State != "fetched" || a0.State != a1.State || a0.Detail != a1.Detail {
			t.Errorf("why %s: %+v from %s, %+v from %s; want the same, fetched", seed, a0, c.agents[0].name, a1, c.agents[1].name)
		}
		if !strings.Contains(a0.Source, "agent "+fetcher) {
			t.Errorf("why %s: source %q does not name %s, which fetches from its address", seed, a0.Source, fetcher)
		}
		if strings.Contains(a0.Source, "through agent") {
			through++
		}
	}
	if through == 0 {
		t.Error("no seed's answer came from the fetching agent through another key owner: the test shows nothing of the hand-off")
	}

	// A URL queued at the agent that fetches from its address, asked of
	// the other agent.
	queuedAsked := false
	for i := range c.agents {
		var top []struct{ Host string }
		json.Unmarshal(get(t, "http://"+consoles[i]+"/api/v1/hosts?sort=queued&limit=1"), &top)
		if len(top) == 0 {
			continue
		}
		var d struct{ Next []string }
		json.Unmarshal(get(t, "http://"+consoles[i]+"/api/v1/hosts/"+url.PathEscape(top[0].Host)), &d)
		// Not a URL robots.txt disallows: those are answered as refused.
		d.Next = slices.DeleteFunc(d.Next, func(u string) bool { return strings.Contains(u, "/private/") })
		if len(d.Next) == 0 {
			continue
		}
		u := d.Next[len(d.Next)-1]
		w := ask(1-i, u)
		switch w.State {
		case "queued", "virtualized", "in-flight", "parsing", "fetched":
		default:
			t.Errorf("why %s (queued at %s) asked of %s: %+v", u, c.agents[i].name, c.agents[1-i].name, w)
		}
		if !strings.Contains(w.Source, "agent "+c.agents[i].name) {
			t.Errorf("why %s: source %q does not name %s, which holds it", u, w.Source, c.agents[i].name)
		}
		queuedAsked = true
		break
	}
	if !queuedAsked {
		t.Error("no agent held queued URLs")
	}
	nv := strings.TrimSuffix(web.web.NormalSeeds()[0], "/") + "/never-linked.html"
	if a0, a1 := ask(0, nv), ask(1, nv); a0.State != "never-seen" || a1.State != "never-seen" {
		t.Errorf("why %s: %+v and %+v, want never-seen", nv, a0, a1)
	}

	// The blocklist, through agent1's console: in force and saved on both.
	last, _ := url.Parse(web.web.NormalSeeds()[len(web.web.NormalSeeds())-1])
	victim := last.Hostname()
	tok, _ := os.ReadFile(filepath.Join(c.agents[0].dir, "state", "console.token"))
	body, _ := json.Marshal(map[string]any{"entries": []string{victim}})
	req, _ := http.NewRequest("POST", "http://"+consoles[0]+"/api/v1/blocklist", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	blockedAt := time.Now()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /blocklist: %s %s", resp.Status, out)
	}
	// The POST returns once the crawl's settings key holds the change and
	// this agent applied it; each other agent applies it from its watch.
	for _, a := range c.agents {
		deadline := time.Now().Add(10 * time.Second)
		b, err := os.ReadFile(filepath.Join(a.dir, "state", "blocklist.json"))
		for (err != nil || !strings.Contains(string(b), `"`+victim+`"`)) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			b, err = os.ReadFile(filepath.Join(a.dir, "state", "blocklist.json"))
		}
		if err != nil || !strings.Contains(string(b), `"`+victim+`"`) {
			t.Errorf("agent %s: blocklist.json %s, %v; want %s within 10 s", a.name, b, err, victim)
		}
	}
	vu := "http://" + last.Host + "/p/39.html"
	if w := ask(1, vu); w.State != "refused" || w.Rule != "blocklist" {
		t.Errorf("why %s on %s after the blocklist: %+v", vu, c.agents[1].name, w)
	}
	// POST /stop on agent2 takes SIGTERM's path: a leave, then a clean
	// stop; agent1 finishes the crawl.
	tok2, _ := os.ReadFile(filepath.Join(c.agents[1].dir, "state", "console.token"))
	req, _ = http.NewRequest("POST", "http://"+consoles[1]+"/api/v1/stop", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok2)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /stop on %s: %v %v", c.agents[1].name, resp, err)
	}
	c.agents[1].waitFor(t, "leaving the crawl", 20*time.Second)
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	for _, h := range web.web.Hits() {
		if h.Host == victim && h.Start.After(blockedAt.Add(250*time.Millisecond)) {
			t.Errorf("request %s%s started %v after its host was blocked", h.Host, h.Path, h.Start.Sub(blockedAt))
		}
	}
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}
