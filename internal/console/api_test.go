package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/petrel-crawler/petrel/internal/revisit"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// fakeCrawl is a Crawl that records what it is asked and answers from its
// fields.
type fakeCrawl struct {
	mu          sync.Mutex
	state       State
	calls       []string
	seeds       []string
	changes     map[string]any
	reconfErr   error
	checkErr    error
	settings    map[string]any
	hosts       []HostSummary
	hostQuery   HostQuery
	blocked     []string
	whyAsked    string
	checkpoints int
	revisits    *revisit.Figures // nil: not a revisit crawl
}

func (f *fakeCrawl) called(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

func (f *fakeCrawl) Counters() stats.Snapshot { return stats.Snapshot{"Fetched": 42, "SieveNew": 99} }
func (f *fakeCrawl) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}
func (f *fakeCrawl) Pause() error {
	f.called("pause")
	f.mu.Lock()
	f.state = Paused
	f.mu.Unlock()
	return nil
}
func (f *fakeCrawl) Resume() error {
	f.called("resume")
	f.mu.Lock()
	f.state = Running
	f.mu.Unlock()
	return nil
}
func (f *fakeCrawl) Checkpoint(context.Context) error { f.called("checkpoint"); return f.checkErr }
func (f *fakeCrawl) Stop()                            { f.called("stop") }
func (f *fakeCrawl) AddSeeds(urls []string) []SeedResult {
	f.called("seeds")
	f.seeds = append(f.seeds, urls...)
	out := make([]SeedResult, len(urls))
	for i, u := range urls {
		out[i] = SeedResult{URL: u, Accepted: strings.HasPrefix(u, "http")}
		if !out[i].Accepted {
			out[i].Reason = "not a URL"
		}
	}
	return out
}
func (f *fakeCrawl) Settings() map[string]any { return f.settings }
func (f *fakeCrawl) DescribeSettings() []SettingInfo {
	return []SettingInfo{{Name: "host-delay", Live: true}}
}
func (f *fakeCrawl) Reconfigure(changes map[string]any) error {
	f.called("reconfigure")
	f.changes = changes
	return f.reconfErr
}
func (f *fakeCrawl) Hosts(_ context.Context, q HostQuery) ([]HostSummary, error) {
	f.hostQuery = q
	return f.hosts, nil
}
func (f *fakeCrawl) Host(_ context.Context, name string) (HostDetail, bool, error) {
	for _, h := range f.hosts {
		if h.Host == name {
			return HostDetail{HostSummary: h, Delay: "2s"}, true, nil
		}
	}
	return HostDetail{}, false, nil
}
func (f *fakeCrawl) Why(_ context.Context, u string) (Why, error) {
	f.whyAsked = u
	return Why{URL: u, State: WhyNeverSeen, Detail: "no part of the crawl knows this URL"}, nil
}
func (f *fakeCrawl) Block(_ context.Context, entries []string) (BlockResult, error) {
	f.blocked = entries
	return BlockResult{Added: entries, Dropped: 3}, nil
}
func (f *fakeCrawl) Members() []Member { return nil }
func (f *fakeCrawl) Revisits() (revisit.Figures, bool) {
	if f.revisits == nil {
		return revisit.Figures{}, false
	}
	return *f.revisits, true
}

// apiClient calls a console served on loopback.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

// call sends method path with body (a string sent as JSON, unless ct
// says otherwise) and returns the status and the decoded JSON answer.
func (c apiClient) call(method, path, ct, body string, auth bool) (int, any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", ct)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		c.t.Fatalf("%s %s: Content-Type %q, want JSON; body %q", method, path, got, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		c.t.Fatalf("%s %s: %v in %q", method, path, err, b)
	}
	return resp.StatusCode, v
}

// serveFake serves a console of crawl on a loopback port until the test
// ends.
func serveFake(t *testing.T, crawl *fakeCrawl) apiClient {
	t.Helper()
	s, err := Listen(Options{Addr: "127.0.0.1:0", Token: "tok-" + t.Name(), Crawl: crawl})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return apiClient{t: t, base: "http://" + s.Addr() + "/api/v1", token: "tok-" + t.Name()}
}

// field is v's entry at the dotted path.
func field(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestAPIActions: the state-changing calls need the token, reach the
// crawl, and answer its state; a crawl's error is answered with its code.
func TestAPIActions(t *testing.T) {
	crawl := &fakeCrawl{state: Running}
	c := serveFake(t, crawl)
	if code, v := c.call("POST", "/pause", "", "", false); code != 401 || field(v, "error") == nil {
		t.Errorf("pause without the token: %d %v, want 401 with an error", code, v)
	}
	if len(crawl.calls) != 0 {
		t.Fatalf("a refused call reached the crawl: %v", crawl.calls)
	}
	if code, v := c.call("POST", "/pause", "", "", true); code != 200 || field(v, "state") != "paused" {
		t.Errorf("pause: %d %v, want 200 and state paused", code, v)
	}
	if code, v := c.call("POST", "/resume", "", "", true); code != 200 || field(v, "state") != "running" {
		t.Errorf("resume: %d %v, want 200 and state running", code, v)
	}
	crawl.checkErr = fmt.Errorf("%w: the crawl is stopping", ErrState)
	if code, v := c.call("POST", "/checkpoint", "", "", true); code != 409 || !strings.Contains(fmt.Sprint(field(v, "error")), "stopping") {
		t.Errorf("checkpoint refused by the crawl: %d %v, want 409 with its reason", code, v)
	}
	crawl.checkErr = errors.New("disk full")
	if code, _ := c.call("POST", "/checkpoint", "", "", true); code != 500 {
		t.Errorf("checkpoint failing: %d, want 500", code)
	}
	if code, _ := c.call("POST", "/stop", "", "", true); code != 200 {
		t.Errorf("stop: %d", code)
	}
	want := "pause resume checkpoint checkpoint stop"
	if got := strings.Join(crawl.calls, " "); got != want {
		t.Errorf("the crawl was asked %q, want %q", got, want)
	}
	if code, v := c.call("GET", "/status", "", "", false); code != 200 || field(v, "state") == nil {
		t.Errorf("status: %d %v", code, v)
	}
	if code, v := c.call("GET", "/nothing", "", "", false); code != 404 || !strings.Contains(fmt.Sprint(field(v, "error")), "no such call") {
		t.Errorf("an unknown call: %d %v, want 404 saying so", code, v)
	}
}

// TestAPIStatusRevisits: the status carries a revisit crawl's schedule,
// and no "revisits" at all for a crawl that is not one.
func TestAPIStatusRevisits(t *testing.T) {
	crawl := &fakeCrawl{state: Running}
	c := serveFake(t, crawl)
	if code, v := c.call("GET", "/status", "", "", false); code != 200 || field(v, "revisits") != nil {
		t.Errorf("status of a crawl without --revisit: %d, revisits %v, want none", code, field(v, "revisits"))
	}
	crawl.revisits = &revisit.Figures{Scheduled: 40, Due: 2, DueHour: 9, Issued: 3, Revisits: 20, NotModified: 12, BytesSaved: 4096, Freshness: 0.75}
	code, v := c.call("GET", "/status", "", "", false)
	for path, want := range map[string]float64{"revisits.scheduled": 40, "revisits.due": 2, "revisits.due_hour": 9,
		"revisits.not_modified": 12, "revisits.bytes_saved": 4096, "revisits.freshness": 0.75} {
		if got := field(v, path); code != 200 || got != want {
			t.Errorf("status %d: %s = %v, want %v", code, path, got, want)
		}
	}
}

// TestAPISeeds: POST /seeds takes JSON or text (comments and blank lines
// skipped), hands the URLs to the crawl and counts its answers; an empty
// list or a broken body is a 400 that reaches nothing.
func TestAPISeeds(t *testing.T) {
	crawl := &fakeCrawl{state: Running}
	c := serveFake(t, crawl)
	code, v := c.call("POST", "/seeds", "application/json", `{"urls": ["http://a.test/", "nope"]}`, true)
	if code != 200 || field(v, "accepted") != 1.0 || field(v, "refused") != 1.0 {
		t.Errorf("seeds: %d %v, want 1 accepted and 1 refused", code, v)
	}
	code, v = c.call("POST", "/seeds", "text/plain", "# a comment\nhttp://b.test/\n\n  http://c.test/  \n", true)
	if code != 200 || field(v, "accepted") != 2.0 {
		t.Errorf("seeds as text: %d %v, want 2 accepted", code, v)
	}
	if got := strings.Join(crawl.seeds, " "); got != "http://a.test/ nope http://b.test/ http://c.test/" {
		t.Errorf("the crawl was given %q", got)
	}
	for _, body := range []string{`{"urls": []}`, `{"urls": "x"}`, `{"urls": ["a"]} {}`, `not json`} {
		before := len(crawl.seeds)
		if code, v := c.call("POST", "/seeds", "application/json", body, true); code != 400 || field(v, "error") == nil || len(crawl.seeds) != before {
			t.Errorf("seeds %s: %d %v, want 400 with an error and nothing given to the crawl", body, code, v)
		}
	}
}

// TestAPIConfig: GET /config answers the crawl's settings, PATCH passes
// whole numbers as integers, and a change the crawl refuses is a 400
// with its reason.
func TestAPIConfig(t *testing.T) {
	crawl := &fakeCrawl{state: Running, settings: map[string]any{"host-delay": "2s"}}
	c := serveFake(t, crawl)
	if code, v := c.call("GET", "/config", "", "", false); code != 200 || field(v, "host-delay") != "2s" {
		t.Errorf("config: %d %v", code, v)
	}
	if code, v := c.call("GET", "/config?describe=1", "", "", false); code != 200 || fmt.Sprint(v) == "[]" {
		t.Errorf("config described: %d %v", code, v)
	}
	if code, _ := c.call("PATCH", "/config", "application/json", `{"fetchers": 64, "delay-factor": 1.5, "host-delay": "3s"}`, true); code != 200 {
		t.Errorf("patch: %d", code)
	}
	if n, ok := crawl.changes["fetchers"].(int64); !ok || n != 64 {
		t.Errorf("fetchers reached the crawl as %T %v, want int64 64", crawl.changes["fetchers"], crawl.changes["fetchers"])
	}
	if f, ok := crawl.changes["delay-factor"].(float64); !ok || f != 1.5 {
		t.Errorf("delay-factor reached the crawl as %T %v, want float64 1.5", crawl.changes["delay-factor"], crawl.changes["delay-factor"])
	}
	crawl.reconfErr = errors.New("--fetchers must be at least 1, not 0")
	if code, v := c.call("PATCH", "/config", "application/json", `{"fetchers": 0}`, true); code != 400 || !strings.Contains(fmt.Sprint(field(v, "error")), "at least 1") {
		t.Errorf("a refused change: %d %v, want 400 with the crawl's reason", code, v)
	}
	if code, _ := c.call("PATCH", "/config", "application/json", `{}`, true); code != 400 {
		t.Errorf("an empty change: %d, want 400", code)
	}
}

// TestAPIHostsWhyBlock: the reads pass their query to the crawl and check
// it first; a host the crawl does not hold is a 404.
func TestAPIHostsWhyBlock(t *testing.T) {
	crawl := &fakeCrawl{state: Running, hosts: []HostSummary{{Host: "http://a.test", Queued: 5, State: "active"}}}
	c := serveFake(t, crawl)
	if code, v := c.call("GET", "/hosts?limit=10", "", "", false); code != 200 || fmt.Sprint(v) == "[]" || crawl.hostQuery != (HostQuery{Sort: "queued", Limit: 10}) {
		t.Errorf("hosts: %d %v, query %+v", code, v, crawl.hostQuery)
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?sort=size"} {
		if code, _ := c.call("GET", "/hosts"+q, "", "", false); code != 400 {
			t.Errorf("hosts%s: %d, want 400", q, code)
		}
	}
	if code, v := c.call("GET", "/hosts/"+url.PathEscape("http://a.test"), "", "", false); code != 200 || field(v, "delay") != "2s" {
		t.Errorf("host: %d %v", code, v)
	}
	if code, _ := c.call("GET", "/hosts/"+url.PathEscape("http://b.test"), "", "", false); code != 404 {
		t.Errorf("a host the crawl does not hold: %d, want 404", code)
	}
	if code, v := c.call("GET", "/why?url=http%3A%2F%2Fa.test%2Fx", "", "", false); code != 200 || field(v, "state") != string(WhyNeverSeen) || crawl.whyAsked != "http://a.test/x" {
		t.Errorf("why: %d %v (asked %q)", code, v, crawl.whyAsked)
	}
	if code, _ := c.call("GET", "/why", "", "", false); code != 400 {
		t.Errorf("why without a URL: %d, want 400", code)
	}
	if code, v := c.call("POST", "/blocklist", "application/json", `{"entries": ["b.test", "10.0.0.0/8"]}`, true); code != 200 || field(v, "dropped") != 3.0 || len(crawl.blocked) != 2 {
		t.Errorf("blocklist: %d %v", code, v)
	}
	if code, _ := c.call("POST", "/blocklist", "application/json", `{"entries": []}`, true); code != 400 {
		t.Errorf("an empty blocklist: %d, want 400", code)
	}
}
