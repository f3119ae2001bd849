package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// The cluster tests run several petrel processes, each one agent of one
// crawl, on their own loopback addresses, against one synthetic web, and
// judge the crawl from the web's request log and the union of the agents'
// WARC files. The crawl's etcd runs embedded in the first agent (or in
// the agents named by coordinatorFlags); leases are of 2 s.

// clusterTolerance is what the cluster tests allow after an exchange the
// client cut short (Hit.Cut: an agent killed or stopped mid-fetch, where
// three or four crawler processes and the web share two cores); after any
// other exchange checkPoliteness requires the full delay. A request of one
// agent overlapping another's to the same address would show a gap near
// zero or negative, and the WARC check (one agent per address) catches it
// directly.
const clusterTolerance = 25 * time.Millisecond

// clusterRun is a crawl of several agents.
type clusterRun struct {
	web     *crawlRun
	key     string
	agents  []*agentProc
	base    string // parent of the agents' crawl directories
	cluster []string
	// moved: a view change moved addresses between agents, so an address
	// may have been dialled by its old and its new owner one after the
	// other (the web's log judges the per-address gaps).
	moved bool
	// robotsAgain: hosts whose keys may change agent without their
	// robots.txt rules (a key moved with no URL queued carries none), so
	// fetch robots.txt once more.
	robotsAgain map[string]int
	// givenUp: URLs a forget gave up (URL keys); judge does not expect
	// them fetched.
	givenUp map[string]bool
	// twiceOK: URLs (host+path keys) the test allows to be fetched twice
	// (a kill -9 loses what was fetched since the checkpoint it restores).
	twiceOK map[string]bool
	// lostReq: requests whose WARC records a kill -9 may have lost (those
	// of pages the killed agent fetched since the checkpoint it restored).
	lostReq int
	// coordinatorFlags, when set, replace --coordinators of the first
	// agent (several coordinators, or an external etcd).
	coordinatorFlags []string
}

type agentProc struct {
	name   string
	bind   string
	dir    string
	cmd    *exec.Cmd
	stderr syncBuffer
	done   chan error
	env    []string // added to the process's environment at its next start
}

// syncBuffer is a bytes.Buffer the agent's process writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// clusterFlags are every agent's crawl flags besides its own name and
// addresses.
func (c *clusterRun) flags(hostDelay, ipDelay time.Duration) []string {
	return []string{"--hosts", c.web.hosts, "--seeds", c.web.seeds, "--allow-private", "--system-dns=false",
		"--progress", "1s", "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--fetchers", "32", "--retry-delay", "100ms", "--fetch-timeout", "10s",
		"--cluster-key-file", c.key, "--cluster-lease", "2s", "--cluster-batch-delay", "5ms",
		"--leave-timeout", "5s", "--cluster-name", "e2e"}
}

func newClusterRun(t *testing.T, web *crawlRun, firstIP string, n int) *clusterRun {
	t.Helper()
	c := &clusterRun{web: web, base: keepDir(t)}
	c.key = filepath.Join(c.base, "cluster.key")
	if out, err := exec.Command(petrel, "cluster", "keygen", c.key).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	// A port drawn per run (the agent on it, the exchange on the next one,
	// the first agent's etcd on the two after)
	// keeps two test processes using the same addresses apart.
	port := uint16(10000 + 4*rand.IntN(10000))
	ip := netip.MustParseAddr(firstIP)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("agent%d", i+1)
		c.agents = append(c.agents, &agentProc{name: name, bind: netip.AddrPortFrom(ip, port).String(),
			dir: filepath.Join(c.base, name)})
		ip = ip.Next()
	}
	return c
}

// coordinators is the crawl's --coordinators: the first agent runs the
// crawl's etcd, on its address's port + 2 (the exchange is on port + 1).
func (c *clusterRun) coordinators() string {
	a := c.agents[0]
	return coord.AgentCoordinator(a.name, netip.MustParseAddrPort(a.bind)).String()
}

// start starts agent a with the crawl's flags and extra.
func (c *clusterRun) start(t *testing.T, a *agentProc, extra ...string) {
	t.Helper()
	coordinators := c.coordinatorFlags
	if coordinators == nil {
		coordinators = []string{"--coordinators", c.coordinators()}
	}
	args := append(append([]string{"crawl", "--agent", a.name, "--cluster-bind", a.bind, "--dir", a.dir}, coordinators...), extra...)
	a.stderr.Reset()
	a.cmd = exec.Command(petrel, args...)
	a.cmd.Stderr = &a.stderr
	if a.env != nil {
		a.cmd.Env = append(os.Environ(), a.env...)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(a.cmd, a.done)
	proc := a.cmd.Process
	t.Cleanup(func() {
		// The goroutine above owns the Cmd (Wait sets its ProcessState);
		// killing a process that has exited is a harmless error.
		proc.Kill()
	})
}

// wait waits for every agent to exit by itself and returns their errors.
func (c *clusterRun) wait(t *testing.T, timeout time.Duration) map[string]error {
	t.Helper()
	deadline := time.After(timeout)
	out := map[string]error{}
	for _, a := range c.agents {
		select {
		case err := <-a.done:
			out[a.name] = err
		case <-deadline:
			for _, b := range c.agents {
				t.Logf("agent %s stderr:\n%s", b.name, b.stderr.String())
			}
			t.Fatalf("agent %s did not exit within %s", a.name, timeout)
		}
	}
	return out
}

// owners returns, per IP address of the web, the agents owning its hosts
// (the authority policy: the group is the host).
func owners(t *testing.T, hostsFile string, names []string) map[netip.Addr]map[string]bool {
	t.Helper()
	v := viewOf(t, names...)
	out := map[netip.Addr]map[string]bool{}
	for ip, hs := range hostsByIP(t, hostsFile) {
		out[ip] = map[string]bool{}
		for _, h := range hs {
			out[ip][v.Owner(h)] = true
		}
	}
	return out
}

// viewOf is the view of the agents named at epoch 1: a crawl's first,
// which decides the owners of keys and addresses until a member changes.
func viewOf(t *testing.T, names ...string) *cluster.View {
	t.Helper()
	var as []cluster.ViewAgent
	for _, n := range names {
		as = append(as, cluster.ViewAgent{Name: n})
	}
	v, err := cluster.NewView(1, as)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hostsByIP reads the web's hosts file: the host names of each address.
func hostsByIP(t *testing.T, hostsFile string) map[netip.Addr][]string {
	t.Helper()
	b, err := os.ReadFile(hostsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[netip.Addr][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if ip, err := netip.ParseAddr(f[0]); err == nil {
			out[ip] = append(out[ip], f[1:]...)
		}
	}
	return out
}

// judge checks the crawl from the web's log and the union of the WARC
// files: every expected URL fetched exactly once across the agents,
// nothing disallowed, robots.txt once per host and first, no politeness
// violation per host or per address. robots.txt is not kept across a
// restart: each of the crawl's starts may fetch it once per host.
func (c *clusterRun) judge(t *testing.T, hostDelay, ipDelay time.Duration, starts int) {
	t.Helper()
	hits := c.web.hits(t)
	expected, _ := c.checkFetches(t, hits, true)
	c.checkRobots(t, hits, starts)
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, clusterTolerance)
	c.checkArchive(t, expected, len(hits)-c.lostReq, len(hits))
	if !c.moved {
		c.checkOneAgentPerAddress(t)
	}
}

// checkFetches checks the pages in the web's log: every expected URL
// fetched (but those a forget gave up), with once exactly once (twice for
// those in twiceOK), nothing unexpected, nothing disallowed. It returns the
// expected URLs (as keys) and how many times each page was fetched.
func (c *clusterRun) checkFetches(t *testing.T, hits []testweb.Hit, once bool) (expected map[string]bool, seen map[string]int) {
	t.Helper()
	expected, seen = map[string]bool{}, map[string]int{}
	for _, u := range c.web.expected() {
		expected[urlKey(t, u)] = true
	}
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			seen[key(h.Host, h.Path)]++
		}
	}
	for k := range c.givenUp {
		if seen[k] == 0 {
			delete(expected, k)
		}
	}
	missing, twice := 0, 0
	for k := range expected {
		switch n := seen[k]; {
		case n == 0:
			if missing++; missing <= 5 {
				t.Errorf("expected URL %s never fetched", k)
			}
		case once && n > 1 && !(n == 2 && c.twiceOK[k]):
			if twice++; twice <= 5 {
				t.Errorf("expected URL %s fetched %d times", k, n)
			}
		}
	}
	if missing+twice > 0 {
		t.Errorf("%d of %d expected URLs missing, %d fetched more than once", missing, len(expected), twice)
	}
	for k, n := range seen {
		if !expected[k] {
			t.Errorf("unexpected fetch of %s (%d times)", k, n)
		}
	}
	for _, u := range c.web.disallowed() {
		if n := seen[urlKey(t, u)]; n > 0 {
			t.Errorf("robots-disallowed URL %s fetched %d times", u, n)
		}
	}
	return expected, seen
}

// checkRobots checks that every host's first request was for robots.txt,
// and that it was fetched at most once per start of the crawl (and once
// more for a host in robotsAgain).
func (c *clusterRun) checkRobots(t *testing.T, hits []testweb.Hit, starts int) {
	t.Helper()
	robots := map[string]int{}
	firstReq := map[string]string{}
	for _, h := range hits {
		if _, ok := firstReq[h.Host]; !ok {
			firstReq[h.Host] = h.Path
		}
		if h.Path == "/robots.txt" {
			robots[h.Host]++
		}
	}
	for host, p := range firstReq {
		if p != "/robots.txt" || robots[host] < 1 || robots[host] > starts+c.robotsAgain[host] {
			t.Errorf("host %s: first request %s, robots.txt fetched %d times; want it first, once per start (%d)", host, p, robots[host], starts)
		}
	}
}

// checkArchive checks the union of the agents' WARC files, the crawl's
// archive: each file carries its agent's name, every record reads back
// with valid digests, every expected URL has a response record, and there
// are between minReq and maxReq request records (a kill -9 loses the
// records its WARC writer had not written yet).
func (c *clusterRun) checkArchive(t *testing.T, expected map[string]bool, minReq, maxReq int) {
	t.Helper()
	union := filepath.Join(c.base, "union")
	os.MkdirAll(union, 0o755)
	for _, a := range c.agents {
		files, _ := filepath.Glob(filepath.Join(a.dir, "warc", "*.warc.gz"))
		for _, f := range files {
			if !strings.HasPrefix(filepath.Base(f), "petrel-"+a.name) {
				t.Errorf("WARC file %s does not carry its agent's name", f)
			}
			os.Symlink(f, filepath.Join(union, filepath.Base(f)))
		}
	}
	checkWARCRequests(t, union, expected, minReq, maxReq)
}

// checkOneAgentPerAddress checks that one agent made every request to one
// address (the design that keeps --ip-delay across the crawl): the WARC
// records say who dialled what.
func (c *clusterRun) checkOneAgentPerAddress(t *testing.T) {
	t.Helper()
	byIP := map[string]map[string]int{}
	uris := map[string][]string{} // address → "agent date uri"
	for _, a := range c.agents {
		if _, err := os.Stat(filepath.Join(a.dir, "warc")); err != nil {
			continue
		}
		eachWARCRecord(t, filepath.Join(a.dir, "warc"), func(_ string, rec gowarc.Record) {
			if rec.WarcRecord.Type() != gowarc.Request {
				return
			}
			ip := rec.WarcRecord.WarcHeader().Get(gowarc.WarcIPAddress)
			if byIP[ip] == nil {
				byIP[ip] = map[string]int{}
			}
			byIP[ip][a.name]++
			h := rec.WarcRecord.WarcHeader()
			uris[ip] = append(uris[ip], a.name+" "+h.Get(gowarc.WarcDate)+" "+h.Get(gowarc.WarcTargetURI))
		})
	}
	for ip, who := range byIP {
		if len(who) != 1 {
			t.Errorf("address %s was fetched from by several agents: %v", ip, who)
			for _, u := range uris[ip] {
				if !strings.HasPrefix(u, c.agents[len(c.agents)-1].name) || len(who) > 1 {
					t.Log(u)
				}
			}
		}
	}
}

func TestClusterThreeAgents(t *testing.T) {
	t.Parallel() // waits more than it computes, on a web in its own process: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWebProcess(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 15, Seed: 13,
		FirstIP: netip.MustParseAddr("127.61.0.1")})
	c := newClusterRun(t, web, "127.213.0.1", 3)
	// The web must have addresses whose hosts have different owners.
	shared := 0
	for _, o := range owners(t, web.hosts, []string{"agent1", "agent2", "agent3"}) {
		if len(o) > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no address of the web has hosts owned by different agents: the test would prove nothing about per-IP politeness")
	}
	t.Logf("%d addresses have hosts owned by more than one agent", shared)
	start := time.Now()
	for _, a := range c.agents {
		c.start(t, a, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3")...)
	}
	errs := c.wait(t, 90*time.Second)
	t.Logf("all agents exited after %s", time.Since(start).Round(time.Millisecond))
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
		if !strings.Contains(a.stderr.String(), "crawl finished") || !strings.Contains(a.stderr.String(), "URLs sent") {
			t.Errorf("agent %s: no summary with the exchange's counts:\n%s", a.name, a.stderr.String())
		}
		if _, err := os.Stat(filepath.Join(a.dir, "state", "FINISHED")); err != nil {
			t.Errorf("agent %s: %v", a.name, err)
		}
	}
	c.judge(t, hostDelay, ipDelay, 1)
	// Every agent fetched a share.
	for _, a := range c.agents {
		if st := readStats(t, a.dir); st["Fetched"] == 0 || st["ClusterSent"] == 0 {
			t.Errorf("agent %s fetched %d pages and sent %d URLs", a.name, st["Fetched"], st["ClusterSent"])
		}
	}
	// An agent started again on a finished crawl says so and exits 0.
	a := c.agents[0]
	c.start(t, a, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3")...)
	select {
	case err := <-a.done:
		if err != nil || !(strings.Contains(a.stderr.String(), "is finished") || strings.Contains(a.stderr.String(), "is complete")) {
			t.Errorf("restart on a finished crawl: %v\n%s", err, a.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("restart on a finished crawl did not exit")
	}
}

// waitFor waits until the agent's stderr contains s.
func (a *agentProc) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(a.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("agent %s: no %q within %s:\n%s", a.name, s, timeout, a.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterRefusesIntruders runs a crawl of two agents and, once it has
// its view, sends forged, replayed and malformed batches to one agent's
// exchange (checkForgedAndReplayed), then starts an agent holding another
// key (refused at join, naming the key, exit 2) and one with another
// assignment policy (refused with the difference, exit 2); neither
// fetches anything, and the crawl itself is whole.
func TestClusterRefusesIntruders(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 12, HostsPerIP: 3, PagesPerHost: 15, Seed: 17,
		FirstIP: netip.MustParseAddr("127.61.1.1")})
	c := newClusterRun(t, web, "127.213.1.1", 4)
	crawl := []*agentProc{c.agents[0], c.agents[1]}
	intruders := []*agentProc{c.agents[2], c.agents[3]}
	c.agents = crawl
	for _, a := range crawl {
		c.start(t, a, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "2")...)
	}
	crawl[0].waitFor(t, "view epoch ", 20*time.Second)

	otherKey := filepath.Join(c.base, "other.key")
	if out, err := exec.Command(petrel, "cluster", "keygen", otherKey).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	checkForgedAndReplayed(t, c, crawl[0], otherKey)
	wrongKey, wrongAssign := intruders[0], intruders[1]
	c.agents = []*agentProc{crawl[0], crawl[1], wrongKey}
	keyStart := time.Now()
	c.start(t, wrongKey, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "1", "--cluster-key-file", otherKey)...)
	c.agents = []*agentProc{crawl[0], crawl[1], wrongAssign}
	c.start(t, wrongAssign, append(c.flags(hostDelay, ipDelay), "--cluster-wait", "2", "--assign", "authority")...)
	refused(t, wrongKey, "another key", "do not hold this crawl's key", "(a wrong --cluster-key-file")
	if d := time.Since(keyStart); d > 5*time.Second {
		t.Errorf("the agent with another key exited %s after its start, want within 5 s", d)
	}
	refused(t, wrongAssign, "another --assign", `--assign "authority" here, "host" in the crawl`)
	if strings.Contains(wrongKey.stderr.String(), "view epoch") {
		t.Errorf("agent with another key got a view:\n%s", wrongKey.stderr.String())
	}
	c.agents = crawl
	errs := c.wait(t, 90*time.Second)
	for _, a := range crawl {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	for _, a := range intruders {
		if st := readStats(t, a.dir); st["Fetched"] != 0 || st["RobotsFetched"] != 0 {
			t.Errorf("intruder %s fetched %d pages", a.name, st["Fetched"])
		}
	}
	c.judge(t, hostDelay, ipDelay, 1)
}

// refused waits for agent a, refused by the crawl, to exit 2 with a
// message that has every one of want.
func refused(t *testing.T, a *agentProc, what string, want ...string) {
	t.Helper()
	select {
	case err := <-a.done:
		var ee *exec.ExitError
		ok := errors.As(err, &ee) && ee.ExitCode() == 2
		for _, w := range want {
			ok = ok && strings.Contains(a.stderr.String(), w)
		}
		if !ok {
			t.Errorf("agent with %s: %v, want exit 2 saying %q\n%s", what, err, want, a.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("agent with %s was not refused:\n%s", what, a.stderr.String())
	}
}

// TestClusterStopAndResume stops a crawl of three agents with petrel
// cluster stop mid-way (every agent exits 0), starts the same commands
// again, and judges the whole: every page once, polite.
func TestClusterStopAndResume(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: 19,
		FirstIP: netip.MustParseAddr("127.61.2.1")})
	c := newClusterRun(t, web, "127.213.2.1", 3)
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", "1s")
	for _, a := range c.agents {
		c.start(t, a, flags...)
	}
	c.agents[0].waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if out, err := exec.Command(petrel, "cluster", "stop", "--coordinators", c.coordinators(), "--cluster-name", "e2e", "--cluster-key-file", c.key).CombinedOutput(); err != nil {
		t.Fatalf("petrel cluster stop: %v\n%s", err, out)
	}
	errs := c.wait(t, 60*time.Second)
	before := len(web.web.Hits())
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Fatalf("agent %s after the stop: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
		if _, err := os.Stat(filepath.Join(a.dir, "state", "FINISHED")); err == nil {
			t.Fatalf("agent %s: the crawl finished before the stop; make the web larger", a.name)
		}
	}
	if before == 0 {
		t.Fatal("nothing was fetched before the stop")
	}
	t.Logf("%d requests before the stop", before)
	placed := map[string]int64{} // hosts each agent placed before the stop
	for _, a := range c.agents {
		placed[a.name] = placements(a)
		c.start(t, a, flags...)
	}
	errs = c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s after the resume: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
		checkPlacementsKept(t, a, placed[a.name])
	}
	c.judge(t, hostDelay, ipDelay, 2)
}

// placements is how many hosts agent a has placed (records of its
// state/cluster/placements: an 8-byte magic, then 32 bytes a host).
func placements(a *agentProc) int64 {
	fi, err := os.Stat(filepath.Join(a.dir, "state", "cluster", "placements"))
	if err != nil {
		return 0
	}
	return (fi.Size() - 8) / 32
}

// checkPlacementsKept checks that agent a, which had placed n hosts before
// it was stopped or killed, kept them at its next start.
func checkPlacementsKept(t *testing.T, a *agentProc, n int64) {
	t.Helper()
	if n == 0 {
		t.Errorf("agent %s placed no host before its restart", a.name)
	} else if len(logTimes(t, a, "placements of hosts kept from the last run")) == 0 {
		t.Errorf("agent %s placed %d hosts before its restart, and kept none", a.name, n)
	}
}

// keepDir is t.TempDir, or a directory kept after the test when
// PETREL_KEEP_CLUSTER is set (to read the agents' logs).
func keepDir(t *testing.T) string {
	if os.Getenv("PETREL_KEEP_CLUSTER") == "" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("", "petrel-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("agents' directories kept in %s", d)
	return d
}

// TestClusterKillAndRestart kills one agent of three with SIGKILL in the
// middle of the crawl and starts it again on its directory: it recovers
// from its last checkpoint, the inbox is replayed from there, the others'
// outboxes deliver what it had not acknowledged, and the crawl ends by
// itself with every page fetched, robots obeyed, politely (judged from
// the log of a web in its own process, as the death tests are: each agent
// names itself in its User-Agent). The restart comes well within G, so no
// takeover is expected; the pages fetched twice must be within the death
// tests' bound: those the victim fetched since the checkpoint its restart
// restores (sinceCheckpoint), plus, if the others took its keys over
// after all, the interim owners' refetches (interimRefetches).
func TestClusterKillAndRestart(t *testing.T) {
	t.Parallel() // waits more than it computes, on a web in its own process: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWebProcess(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: 23,
		FirstIP: netip.MustParseAddr("127.61.3.1")})
	c := newClusterRun(t, web, "127.213.3.1", 3)
	flags := func(a *agentProc) []string {
		return append(append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--checkpoint-every", "500ms"), deathUA(a)...)
	}
	for _, a := range c.agents {
		c.start(t, a, flags(a)...)
	}
	victim := c.agents[1]
	victim.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(2500 * time.Millisecond)
	victim.cmd.Process.Kill()
	<-victim.done
	killed := time.Now()
	cp := newestCheckpoint(t, victim)
	placed := placements(victim) // written at once: a kill keeps them
	time.Sleep(500 * time.Millisecond)
	restarted := time.Now()
	c.start(t, victim, flags(victim)...)
	errs := c.wait(t, 120*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	checkPlacementsKept(t, victim, placed)
	if !strings.Contains(victim.stderr.String(), "did not stop cleanly") || !strings.Contains(victim.stderr.String(), fmt.Sprintf("recovered from cp-%06d ", cp.Seq)) {
		t.Errorf("the restarted agent did not recover from its checkpoint %d:\n%s", cp.Seq, victim.stderr.String())
	}
	hits := web.hits(t)
	expected, seen := c.checkFetches(t, hits, false)
	c.checkRobots(t, hits, 2)
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, clusterTolerance)
	c.checkKillDuplicates(t, hits, seen, victim, cp, &deathRun{down: killed, up: restarted})
	// The records of what the victim requested since its checkpoint may be
	// lost with it (those pages it fetches again).
	lostReq := cp.Unfinished
	for _, h := range hits {
		if byAgent(h) == victim.name && !h.Start.Before(cp.Taken) && h.Start.Before(killed) {
			lostReq++
		}
	}
	c.checkArchive(t, expected, len(hits)-lostReq, len(hits))
	// The restarted agent routed what its sieve replayed from the
	// checkpoint to the owners of the addresses, as before the kill.
	c.checkOneAgentPerAddress(t)
}

// checkKillDuplicates checks the pages fetched twice after victim was
// killed (at d.down) and restarted (d.up) on its checkpoint cp against the
// bound of docs/cluster.md: what it fetched since cp (sinceCheckpoint),
// plus the interim owners' refetches if a live agent took its keys over
// meanwhile; it logs the second fetches neither accounts for.
func (c *clusterRun) checkKillDuplicates(t *testing.T, hits []testweb.Hit, seen map[string]int, victim *agentProc, cp lastCheckpoint, d *deathRun) {
	t.Helper()
	extra := 0
	for _, n := range seen {
		extra += n - 1
	}
	for _, a := range c.agents { // the first takeover of the victim's keys, if any
		if ts := logTimes(t, a, "taking over the keys of dead agents"); a != victim && len(ts) > 0 && (d.took.IsZero() || ts[0].Before(d.took)) {
			d.took = ts[0]
		}
	}
	v1 := firstView(t, c)
	lost, interim := sinceCheckpoint(hits, victim.name, cp, d.down), 0
	if !d.took.IsZero() {
		t.Logf("the victim's keys were taken over at %s", d.took.Format("15:04:05.000"))
		interim = interimRefetches(hits, victim.name, v1, d.took)
	}
	unexplained(t, hits, victim.name, v1, d)
	t.Logf("pages fetched twice: %d, bound %d = %d fetched by the victim since its checkpoint %d + %d fetched again by interim owners, of %d requests",
		extra, lost+interim, lost, cp.Seq, interim, len(hits))
	if extra > lost+interim {
		t.Errorf("%d pages fetched twice, over the bound %d (%d fetched by the victim since its checkpoint, %d fetched again by interim owners)", extra, lost+interim, lost, interim)
	}
}
