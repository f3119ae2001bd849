package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// The tests of the crawl's coordination on etcd itself: a stop before the
// first view, several coordinators and their quorum, an external etcd
// server, and the balance of the keys.

// clusterLease is the agents' --cluster-lease in the cluster tests.
const clusterLease = 2 * time.Second

// TestClusterStopDuringFormation: petrel cluster stop while the first
// view waits for a third agent that never comes stops the two waiting
// agents cleanly (exit 0) within seconds; nothing was fetched.
func TestClusterStopDuringFormation(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	web := startWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 5, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.30.1")})
	c := newClusterRun(t, web, "127.213.30.1", 3)
	c.agents = c.agents[:2]
	for _, a := range c.agents {
		c.start(t, a, append(c.flags(120*time.Millisecond, 60*time.Millisecond), "--cluster-wait", "3")...)
	}
	for _, a := range c.agents {
		a.waitFor(t, "waiting for the crawl's agents", 20*time.Second)
	}
	time.Sleep(time.Second) // registered, waiting for the view
	stopped := time.Now()
	if out, err := exec.Command(petrel, "cluster", "stop", "--coordinators", c.coordinators(), "--cluster-name", "e2e", "--cluster-key-file", c.key).CombinedOutput(); err != nil {
		t.Fatalf("petrel cluster stop: %v\n%s", err, out)
	}
	errs := c.wait(t, 20*time.Second)
	t.Logf("both agents exited %s after the stop", time.Since(stopped).Round(time.Millisecond))
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("the agents took %s to stop", d)
	}
	if n := len(web.web.Hits()); n != 0 {
		t.Errorf("%d requests before the first view", n)
	}
}

// statusLeader returns the crawl's leader by petrel cluster status.
func statusLeader(t *testing.T, c *clusterRun, flags ...string) string {
	t.Helper()
	args := append([]string{"cluster", "status", "--json", "--cluster-name", "e2e", "--cluster-key-file", c.key}, flags...)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command(petrel, args...).Output()
		var r struct {
			Leader string `json:"leader"`
		}
		if err == nil && json.Unmarshal(out, &r) == nil && r.Leader != "" {
			return r.Leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("petrel cluster status names no leader: %v\n%s", err, out)
		}
	}
}

// quietAfter checks that no request of agent name started in the web's
// log between from and to.
func quietAfter(t *testing.T, hits []testweb.Hit, name string, from, to time.Time) {
	t.Helper()
	n := 0
	for _, h := range hits {
		if byAgent(h) == name && h.Start.After(from) && h.Start.Before(to) {
			if n++; n <= 3 {
				t.Errorf("agent %s started %s%s at %s, with its lease not known live (cut off since %s)", name, h.Host, h.Path,
					h.Start.Format("15:04:05.000"), from.Add(-clusterLease).Format("15:04:05.000"))
			}
		}
	}
}

// TestClusterThreeCoordinators runs three agents that are the crawl's
// three coordinators. The leader's agent is killed (kill -9) and started
// again: the crawl goes on. Then two coordinators are stopped (SIGSTOP):
// with no quorum, no agent starts a request once its lease's TTL has
// passed; once they are resumed the crawl finishes, every page fetched,
// politely.
func TestClusterThreeCoordinators(t *testing.T) {
	t.Parallel() // judged from the log of a web in its own process, and no duplicate bound: see the package doc
	web, c := deathCrawlWith(t, 41, "127.61.31.1", "127.214.31.1", func(c *clusterRun) {
		var cs []string
		for _, a := range c.agents {
			cs = append(cs, coord.AgentCoordinator(a.name, netip.MustParseAddrPort(a.bind)).String())
		}
		c.coordinatorFlags = []string{"--coordinators", strings.Join(cs, ",")}
	})
	time.Sleep(time.Second)
	leader := statusLeader(t, c, c.coordinatorFlags...)
	var victim *agentProc
	for _, a := range c.agents {
		if a.name == leader {
			victim = a
		}
	}
	if victim == nil {
		t.Fatalf("leader %q is not an agent", leader)
	}
	victim.cmd.Process.Kill()
	<-victim.done
	killed := time.Now()
	time.Sleep(3 * clusterLease) // a new leader, the lease of the dead one expired
	if l := statusLeader(t, c, c.coordinatorFlags...); l == leader {
		t.Errorf("the dead agent %s is still the leader", l)
	}
	c.start(t, victim, append(deathFlags(c), deathUA(victim)...)...)
	victim.waitFor(t, "petrel: agent "+victim.name+": view epoch ", 30*time.Second)
	t.Logf("leader %s killed and back after %s", leader, time.Since(killed).Round(time.Millisecond))

	// Two coordinators stopped: the third agent's lease lapses.
	stoppedAgents := []*agentProc{c.agents[0], c.agents[1]}
	alone := c.agents[2]
	for _, a := range stoppedAgents {
		a.cmd.Process.Signal(syscall.SIGSTOP)
	}
	stopped := time.Now()
	time.Sleep(2*clusterLease + time.Second)
	resumed := time.Now()
	for _, a := range stoppedAgents {
		a.cmd.Process.Signal(syscall.SIGCONT)
	}
	errs := c.wait(t, 120*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	hits := web.hits(t)
	goesOn := 0
	for _, h := range hits {
		if byAgent(h) != victim.name && h.Start.After(killed) && h.Start.Before(killed.Add(3*clusterLease)) {
			goesOn++
		}
	}
	if goesOn == 0 {
		t.Errorf("no request in the %s after the leader's agent was killed", 3*clusterLease)
	}
	quietAfter(t, hits, alone.name, stopped.Add(clusterLease), resumed)
	for _, a := range stoppedAgents {
		quietAfter(t, hits, a.name, stopped.Add(50*time.Millisecond), resumed)
	}
	extra, missing := judgePolite(t, web, hits, firstView(t, c))
	if missing > 0 {
		t.Errorf("%d of %d expected pages never fetched", missing, len(web.expected()))
	}
	t.Logf("%d pages fetched more than once (a kill -9 refetches since its checkpoint)", extra)
}

// deathCrawlWith is deathCrawl with the cluster's flags set by set.
func deathCrawlWith(t *testing.T, seed int64, webIP, agentIP string, set func(*clusterRun)) (*crawlRun, *clusterRun) {
	web := startWebProcess(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: seed,
		FirstIP: netip.MustParseAddr(webIP)})
	c := newClusterRun(t, web, agentIP, 3)
	set(c)
	for _, a := range c.agents {
		c.start(t, a, append(deathFlags(c), deathUA(a)...)...)
	}
	c.agents[0].waitFor(t, "view epoch ", 30*time.Second)
	return web, c
}

// externalEtcd starts an etcd server that is not a Petrel agent (Debian's
// etcd-server package) with TLS files made by petrel cluster etcd-certs
// from the crawl's key, and returns its client URL and process. It skips
// when etcd is absent, unless PETREL_REQUIRE_ETCD=1.
func externalEtcd(t *testing.T, c *clusterRun, ip string) (string, *os.Process) {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("PETREL_REQUIRE_ETCD") == "1" {
			t.Fatalf("etcd server not found (%v) and PETREL_REQUIRE_ETCD=1", err)
		}
		t.Skip("no etcd server: apt-get install etcd-server to run the external-etcd test")
	}
	dir := filepath.Join(c.base, "etcd")
	if out, err := exec.Command(petrel, "cluster", "etcd-certs", "--cluster-key-file", c.key, "--name", "ext", "--ip", ip, "--out", filepath.Join(dir, "tls")).CombinedOutput(); err != nil {
		t.Fatalf("petrel cluster etcd-certs: %v\n%s", err, out)
	}
	port := 20000 + 4*(os.Getpid()%5000)
	cu, pu := fmt.Sprintf("https://%s:%d", ip, port), fmt.Sprintf("https://%s:%d", ip, port+1)
	tls := func(f string) string { return filepath.Join(dir, "tls", f) }
	cmd := exec.Command(bin, "--name", "ext", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "ext="+pu,
		"--trusted-ca-file", tls("ca.pem"), "--cert-file", tls("ext.pem"), "--key-file", tls("ext-key.pem"), "--client-cert-auth",
		"--peer-trusted-ca-file", tls("ca.pem"), "--peer-cert-file", tls("ext.pem"), "--peer-key-file", tls("ext-key.pem"), "--peer-client-cert-auth",
		"--log-level", "error")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("etcd's log:\n%s", log.String())
		}
	})
	return cu, cmd.Process
}

// TestClusterExternalEtcd runs two agents against an external etcd (not
// a Petrel process). The etcd server is stopped (SIGSTOP) mid-crawl: no
// agent starts a request once its lease's TTL has passed since, and
// resumed past the TTL, the agents register again and the crawl finishes,
// every page fetched, politely.
func TestClusterExternalEtcd(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 12, HostsPerIP: 3, PagesPerHost: 25, Seed: 47,
		FirstIP: netip.MustParseAddr("127.61.32.1")})
	c := newClusterRun(t, web, "127.213.32.1", 2)
	endpoint, etcd := externalEtcd(t, c, "127.213.32.9")
	c.coordinatorFlags = []string{"--etcd-endpoints", endpoint}
	for _, a := range c.agents {
		c.start(t, a, append(append(c.flags(hostDelay, ipDelay), "--cluster-wait", "2"), deathUA(a)...)...)
	}
	c.agents[0].waitFor(t, "view epoch ", 30*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if err := etcd.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	time.Sleep(2*clusterLease + time.Second)
	resumed := time.Now()
	etcd.Signal(syscall.SIGCONT)
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	hits := web.hits(t)
	for _, a := range c.agents {
		quietAfter(t, hits, a.name, stopped.Add(clusterLease), resumed)
	}
	c.moved = true // the agents come back as returns: keys may move
	expected, seen := c.checkFetches(t, hits, false)
	checkPolitenessWithin(t, hits, hostDelay, ipDelay, clusterTolerance)
	twice := 0
	for k := range expected {
		if seen[k] > 1 {
			twice++
		}
	}
	t.Logf("%d pages fetched twice across the etcd outage", twice)
}
