package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// webProc is the synthetic web served by its own process: petrel testweb
// built without -race (petrel), which writes its request log to a
// file once stopped. The death and kill tests judge politeness from it:
// a web inside the race-instrumented test process answers and logs more
// slowly on two loaded cores, and a politeness check must not depend on
// the test's build. The log's times are the web's own (Start when its
// handler began, End when the last write of the answer began: see
// testweb's stamp.go), read back by the wall clock.
type webProc struct {
	cmd      *exec.Cmd
	stderr   syncBuffer
	done     chan error
	dir      string
	expected []string
	disallow []string
	hits     []testweb.Hit // once stopped
	stopped  bool
}

// startWebProcess starts petrel testweb serving the web of cfg (its
// shape, seed, first address and latency; every other field its
// default) and waits until it serves.
func startWebProcess(t *testing.T, cfg testweb.Config) *crawlRun {
	t.Helper()
	p := &webProc{dir: t.TempDir(), done: make(chan error, 1)}
	args := []string{"testweb", "--out", p.dir, "--hit-log", filepath.Join(p.dir, "hits.jsonl"),
		"--web-hosts", fmt.Sprint(cfg.Hosts), "--web-hosts-per-ip", fmt.Sprint(cfg.HostsPerIP),
		"--web-pages", fmt.Sprint(cfg.PagesPerHost), "--web-seed", fmt.Sprint(cfg.Seed),
		"--web-first-ip", cfg.FirstIP.String(), "--web-latency", cfg.Latency.String()}
	p.cmd = exec.Command(petrel, args...)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func(cmd *exec.Cmd) { p.done <- cmd.Wait() }(p.cmd)
	proc := p.cmd.Process
	t.Cleanup(func() { proc.Kill() })
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.stderr.String(), "Ctrl-C stops"); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-p.done:
			t.Fatalf("petrel testweb exited: %v\n%s", err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("petrel testweb did not serve within 30 s:\n%s", p.stderr.String())
		}
	}
	p.expected, p.disallow = readLines(t, filepath.Join(p.dir, "expected.txt")), readLines(t, filepath.Join(p.dir, "disallowed.txt"))
	return &crawlRun{ext: p, dir: filepath.Join(p.dir, "crawl"),
		hosts: filepath.Join(p.dir, "hosts"), seeds: filepath.Join(p.dir, "seeds.txt")}
}

// readLines returns the non-empty lines of a file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stop stops the web (SIGINT: it finishes the requests being answered)
// and returns its request log, in End order; later calls return the same.
func (p *webProc) stop(t *testing.T) []testweb.Hit {
	t.Helper()
	if p.stopped {
		return p.hits
	}
	p.stopped = true
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("stopping petrel testweb: %v", err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("petrel testweb: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("petrel testweb did not stop within 30 s:\n%s", p.stderr.String())
	}
	hits, err := testweb.ReadHitLog(filepath.Join(p.dir, "hits.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p.hits = hits
	return hits
}

// hits returns the web's request log: for a web served by its own
// process, once every client is done (it stops the web).
func (r *crawlRun) hits(t *testing.T) []testweb.Hit {
	if r.ext != nil {
		return r.ext.stop(t)
	}
	return r.web.Hits()
}

// expected is the web's Expected.
func (r *crawlRun) expected() []string {
	if r.ext != nil {
		return r.ext.expected
	}
	return r.web.Expected()
}

// disallowed is the web's Disallowed.
func (r *crawlRun) disallowed() []string {
	if r.ext != nil {
		return r.ext.disallow
	}
	return r.web.Disallowed()
}

// TestWebProcessLog checks the log that the death and kill tests judge
// politeness from (a petrel testweb process's, read back from its file)
// against a client that notes, by the wall clock, when it began each
// request and when it had read the whole answer: every logged request
// lies inside its client's span (so a logged gap is never shorter than the
// one the client kept, and a delay the client kept never reads as a
// violation), and the check finds the violations of requests sent back to
// back.
func TestWebProcessLog(t *testing.T) {
	r := startWebProcess(t, testweb.Config{Hosts: 2, HostsPerIP: 2, PagesPerHost: 4, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.9.1")})
	var ip netip.Addr
	var hosts []string
	for a, hs := range hostsByIP(t, r.hosts) {
		ip, hosts = a, hs
	}
	if len(hosts) != 2 {
		t.Fatalf("hosts %v on %s, want 2", hosts, ip)
	}
	seed, err := url.Parse(readLines(t, r.seeds)[1]) // the first line is a comment
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ sent, read time.Time }
	spans := map[string]span{}
	c := &http.Client{Timeout: 10 * time.Second}
	minGap := time.Hour
	var prev time.Time
	for i := range 12 {
		host, path := hosts[i%2], fmt.Sprintf("/probe-%d", i)
		if i < 2 {
			path = "/robots.txt"
		}
		req, err := http.NewRequest(http.MethodGet, "http://"+netip.AddrPortFrom(ip, mustPort(t, seed)).String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host + ":" + seed.Port()
		sent := time.Now().Round(0) // the wall clock, as the log's
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		read := time.Now().Round(0)
		if !prev.IsZero() {
			minGap = min(minGap, sent.Sub(prev))
		}
		prev = read
		spans[key(host, path)] = span{sent, read}
	}
	hits := r.hits(t)
	if len(hits) != 12 {
		t.Fatalf("the log holds %d requests, the client made 12", len(hits))
	}
	for _, h := range hits {
		s, ok := spans[key(h.Host, h.Path)]
		if !ok {
			t.Fatalf("logged request %s %s not made", h.Host, h.Path)
		}
		if h.Start.Before(s.sent) || h.End.After(s.read) || h.End.Before(h.Start) {
			t.Errorf("%s %s logged %s–%s, outside the client's %s–%s", h.Host, h.Path,
				h.Start.Format(time.StampMicro), h.End.Format(time.StampMicro), s.sent.Format(time.StampMicro), s.read.Format(time.StampMicro))
		}
	}
	if g := politenessGaps(hits, minGap, minGap, 0); len(g) > 0 {
		t.Errorf("the client kept %v between requests to the address; the log shows less: %+v", minGap, g[0])
	}
	// Back to back: every request after the first on the address, and on
	// each host, is too soon for a delay of an hour.
	if g := politenessGaps(hits, time.Hour, time.Hour, 0); len(g) != 11+5+5 {
		t.Errorf("%d violations found in 12 requests sent back to back to 2 hosts on one address, want 21", len(g))
	}
}

// mustPort is the port of a URL that names one.
func mustPort(t *testing.T, u *url.URL) uint16 {
	t.Helper()
	var p uint16
	if _, err := fmt.Sscan(u.Port(), &p); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return p
}
