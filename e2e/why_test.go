package e2e

import (
	"encoding/json"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// whyAnswer is the part of a "why" answer the tests read.
type whyAnswer struct {
	URL, State, Rule, Detail string
	Facts                    []struct{ Name, Value string }
}

func (w whyAnswer) String() string { b, _ := json.Marshal(w); return string(b) }

// TestWhy asks "why" for URLs in every state, of a running crawl (through
// its console) and of the stopped directory (petrel why --dir):
// robots-denied, cut by a trap rule, out of scope, queued in RAM,
// virtualized on disk, fetched, failed, never seen.
func TestWhy(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	r := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 4, PagesPerHost: 300, Seed: 3, FirstIP: netip.MustParseAddr("127.64.0.1")})
	// A host in the hosts file where nothing listens: its connections are
	// refused, it waits, and after --host-down-give-up its URLs are
	// dropped.
	dead := "http://dead.petrel.test:" + strings.Split(freeAddr(t), ":")[1] + "/"
	appendFile(t, r.hosts, "127.64.9.9 dead.petrel.test\n")
	appendFile(t, r.seeds, dead+"\n")
	const maxLen = 44
	c := startConsoleCrawl(t, r, "--host-delay", "250ms", "--ip-delay", "5ms", "--workbench-bytes", "3000",
		"--front-size", "4", "--max-url-length", "44", "--scope", "host", "--retries", "1", "--retry-delay", "50ms",
		"--fetch-timeout", "5s", "--host-down-backoff", "100ms", "--host-down-give-up", "1s")
	seed := r.web.NormalSeeds()[0]
	for len(r.web.Hits()) < 60 {
		time.Sleep(50 * time.Millisecond)
	}

	ask := func(u string) whyAnswer {
		t.Helper()
		var w whyAnswer
		if err := json.Unmarshal(c.must(t, "GET", "/api/v1/why?url="+url.QueryEscape(u), nil), &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	fetchedNow := func(u string) bool {
		k := urlKey(t, u)
		for _, h := range r.web.Hits() {
			if key(h.Host, h.Path) == k {
				return true
			}
		}
		return false
	}
	var long string
	for _, u := range r.web.Expected() {
		if len(u) > maxLen && !strings.Contains(u, "/private/") {
			long = u
			break
		}
	}
	// A queued URL in RAM and one on disk, from the busiest host.
	var hosts []struct{ Host string }
	json.Unmarshal(c.must(t, "GET", "/api/v1/hosts?sort=queued&limit=1", nil), &hosts)
	if len(hosts) == 0 {
		t.Fatal("no host holds URLs")
	}
	var detail struct {
		Next, NextOnDisk []string `json:"-"`
		N                []string `json:"next"`
		D                []string `json:"next_on_disk"`
	}
	json.Unmarshal(c.must(t, "GET", "/api/v1/hosts/"+url.PathEscape(hosts[0].Host), nil), &detail)
	if len(detail.N) < 2 || len(detail.D) == 0 {
		t.Fatalf("host %s: queue in RAM %v, on disk %v: the test needs both", hosts[0].Host, detail.N, detail.D)
	}
	// Not a URL robots.txt disallows: those are reported as refused.
	pick := func(list []string) string {
		for i := len(list) - 1; i >= 0; i-- {
			if !strings.Contains(list[i], "/private/") {
				return list[i]
			}
		}
		t.Fatalf("every queued URL of %v is under /private/", list)
		return ""
	}
	queued, onDisk := pick(detail.N), pick(detail.D)

	cases := []struct {
		name, url, state, rule string
		stopped, stoppedRule   string // the answer from the stopped directory
	}{
		{"fetched", seed, "fetched", "", "fetched", ""},
		{"robots", r.web.Disallowed()[0], "refused", "robots", "refused", "robots"},
		{"trap", long, "refused", "trap-length", "refused", "trap-length"}, // logs/skipped.jsonl has it
		{"scope", "http://elsewhere.petrel.test/page.html", "refused", "scope", "never-seen", ""},
		{"queued", queued, "queued", "", "ready", ""},
		{"virtualized", onDisk, "virtualized", "", "ready", ""},
		{"failed", dead + "page.html", "", "", "", ""},
		{"never-seen", strings.TrimSuffix(seed, "/") + "/nv.html", "never-seen", "", "never-seen", ""},
	}
	// The dead host's URL: its seed failed (its host unreachable).
	cases[6].url = dead
	deadline := time.Now().Add(30 * time.Second)
	for {
		if w := ask(dead); w.State == "failed" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cases[6].state, cases[6].rule, cases[6].stopped, cases[6].stoppedRule = "failed", "host-down", "failed", "host-down"

	running := map[string]whyAnswer{}
	for _, tc := range cases {
		w := ask(tc.url)
		running[tc.name] = w
		if w.State != tc.state || w.Rule != tc.rule {
			t.Errorf("%s: why %s = %s, want state %q rule %q", tc.name, tc.url, w, tc.state, tc.rule)
		}
		switch w.State {
		case "queued", "virtualized", "never-seen", "refused":
			if fetchedNow(tc.url) {
				t.Errorf("%s: %s is %s but the server logged its fetch", tc.name, tc.url, w.State)
			}
		case "fetched":
			if !fetchedNow(tc.url) {
				t.Errorf("%s: %s is fetched but the server never served it", tc.name, tc.url)
			}
		}
	}
	if !hasFact(running["robots"], "matching line", "Disallow: /private/") {
		t.Errorf("robots: no matching line in %v", running["robots"])
	}

	// The blocklist: a host's queued URLs are dropped and counted, none of
	// its requests starts afterwards, and why names the rule.
	// The second busiest host (the busiest gave the queued URLs above).
	var two []struct{ Host string }
	json.Unmarshal(c.must(t, "GET", "/api/v1/hosts?sort=queued&limit=2", nil), &two)
	if len(two) < 2 {
		t.Fatalf("hosts: %v", two)
	}
	victim := keyHost(two[1].Host)
	if two[1].Host == hosts[0].Host {
		victim = keyHost(two[0].Host)
	}
	var blocked struct {
		Added   []string
		Dropped int64
	}
	json.Unmarshal(c.must(t, "POST", "/api/v1/blocklist", map[string]any{"entries": []string{victim}}), &blocked)
	blockedAt := time.Now()
	if len(blocked.Added) != 1 || blocked.Dropped == 0 {
		t.Errorf("blocklist %s: %+v, want it added and its queued URLs dropped", victim, blocked)
	}
	if code, _ := c.call(t, "POST", "/api/v1/blocklist", map[string]any{"entries": []string{"10.0.0.0/33"}}, true); code != 400 {
		t.Errorf("blocklist of a malformed range: %d, want 400", code)
	}
	var victimURL string
	for _, u := range r.web.Expected() {
		if strings.Contains(u, "//"+victim+":") && !fetchedNow(u) {
			victimURL = u
			break
		}
	}
	if w := ask(victimURL); w.State != "refused" || w.Rule != "blocklist" {
		t.Errorf("why %s after its host was blocked: %s", victimURL, w)
	}
	time.Sleep(time.Second)
	for _, h := range r.web.Hits() {
		if h.Host == victim && h.Start.After(blockedAt.Add(250*time.Millisecond)) {
			t.Errorf("request %s %s started %v after its host was blocked", h.Host, h.Path, h.Start.Sub(blockedAt))
		}
	}

	c.must(t, "POST", "/api/v1/stop", nil)
	if err := c.wait(t, time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, c.log())
	}
	droppedURL := checkDropsLogged(t, c.dir, victim, blocked.Dropped, dead)
	for i, tc := range cases {
		if u, _ := url.Parse(tc.url); tc.name == "never-seen" && u.Hostname() == victim {
			// The stopped directory's saved blocklist names its host.
			cases[i].stopped, cases[i].stoppedRule = "refused", "blocklist"
		}
	}
	cases = append(cases, struct {
		name, url, state, rule string
		stopped, stoppedRule   string
	}{name: "blocked", url: droppedURL, stopped: "refused", stoppedRule: "blocklist"})
	for _, tc := range cases {
		if tc.name == "queued" || tc.name == "virtualized" {
			if fetchedNow(tc.url) {
				tc.stopped = "fetched" // fetched between the question and the stop
			}
		}
		out, err := exec.Command(petrel, "why", "--dir", c.dir, "--json", tc.url).CombinedOutput()
		if err != nil {
			t.Fatalf("petrel why --dir %s: %v\n%s", tc.url, err, out)
		}
		var w whyAnswer
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatalf("petrel why --json: %v\n%s", err, out)
		}
		if w.State != tc.stopped || w.Rule != tc.stoppedRule {
			t.Errorf("%s (stopped): why %s = %s, want state %q rule %q", tc.name, tc.url, w, tc.stopped, tc.stoppedRule)
		}
	}
	text, _ := exec.Command(petrel, "why", "--dir", c.dir, seed).CombinedOutput()
	if !strings.Contains(string(text), "state   fetched") || !strings.Contains(string(text), "WARC record") {
		t.Errorf("petrel why --dir %s (text):\n%s", seed, text)
	}
}

// checkDropsLogged checks that the URLs the crawl gave up with their host
// have their lines: at least dropped URLs of the blocklisted host victim,
// each in skipped.jsonl (reason blocklist) and in crawl.log (-5001,
// skip:blocklist), none of them fetched; the dead host's seed given up
// with its host unreachable (-62). It returns one of the URLs dropped by
// the blocklist.
func checkDropsLogged(t *testing.T, dir, victim string, dropped int64, deadSeed string) (one string) {
	t.Helper()
	skips := map[string]crawllog.Skip{}
	for _, f := range crawllog.Files(filepath.Join(dir, "logs", "skipped.jsonl")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if s, err := crawllog.ParseSkip([]byte(l)); err == nil {
				skips[s.URL+" "+string(s.Reason)] = s
			}
		}
	}
	lines := map[string]crawllog.Line{}
	fetched := map[string]bool{}
	for _, f := range crawllog.Files(filepath.Join(dir, "logs", "crawl.log")) {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Split(string(b), "\n") {
			if l, err := crawllog.Parse(s); err == nil {
				if reason, ok := l.Annotation("skip"); ok {
					lines[l.URL+" "+reason] = l
				} else if l.Status > 0 {
					fetched[l.URL] = true
				}
			}
		}
	}
	var n int64
	for k, s := range skips {
		if s.Reason != crawllog.ReasonBlocklist || !strings.Contains(s.URL, "//"+victim+":") {
			continue
		}
		n++
		one = s.URL
		if l, ok := lines[k]; !ok || l.Status != crawllog.StatusBlockedByUser {
			t.Errorf("blocked %s: crawl.log line %+v (found %v), want status %d", s.URL, l, ok, crawllog.StatusBlockedByUser)
		}
		if fetched[s.URL] {
			t.Errorf("blocked %s was fetched", s.URL)
		}
	}
	if n < dropped {
		t.Errorf("skipped.jsonl has %d blocklisted URLs of %s, want at least the %d dropped", n, victim, dropped)
	}
	k := deadSeed + " " + string(crawllog.ReasonHostDown)
	if s, ok := skips[k]; !ok || s.Status != crawllog.StatusPrerequisite || lines[k].Status != crawllog.StatusPrerequisite {
		t.Errorf("dead seed %s: skipped %+v (%v), crawl.log %+v; want both with status %d", deadSeed, s, ok, lines[k], crawllog.StatusPrerequisite)
	}
	return one
}

func hasFact(w whyAnswer, name, value string) bool {
	for _, f := range w.Facts {
		if f.Name == name && f.Value == value {
			return true
		}
	}
	return false
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// keyHost is the host name of a politeness key: "host:NAME" (--assign
// host) or "scheme://NAME:port" (--assign authority).
func keyHost(key string) string {
	if h, ok := strings.CutPrefix(key, "host:"); ok {
		return h
	}
	u, _ := url.Parse(key)
	return u.Hostname()
}
