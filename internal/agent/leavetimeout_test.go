package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestLeavePastTimeout: an agent of a crawl of two whose leave does not
// finish within --leave-timeout (1 ns here: past the deadline before the
// view without it is read back) ends as a clean stop does and returns
// errLeaveTimeout, not a usage error (petrel exits 1). The other agent
// sees it gone and awaits its release (the view without it may be
// written: it asked), so the crawl is not over. Started again with time
// enough, the agent resumes its leave from the state it saved, hands
// everything over and returns nil; the other ends the crawl alone, every
// page fetched once.
func TestLeavePastTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, dir, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 2, PagesPerHost: 20, Seed: 7,
		FirstIP: netip.MustParseAddr("127.93.1.1")})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logTail(dir, "a1", "a2"))
		}
	})
	key := filepath.Join(dir, "cluster.key")
	if err := cluster.WriteKeyFile(key); err != nil {
		t.Fatal(err)
	}
	binds := []string{clusterBind(t), clusterBind(t)}
	open := func(i int, leave time.Duration, progress io.Writer) *Agent {
		t.Helper()
		name := fmt.Sprintf("a%d", i+1)
		cfg := testConfig(filepath.Join(dir, name), hostsFile, seeds)
		cfg.Frontier.HostDelay = 100 * time.Millisecond // the crawl outlasts the leave
		cfg.Cluster.Agent, cfg.Cluster.Bind, cfg.Cluster.Coordinators, cfg.Cluster.KeyFile = name, binds[i], coordinatorOf("a1", binds[0]), key
		cfg.Cluster.Wait, cfg.Cluster.LeaveTimeout, cfg.Cluster.CrawlName = 2, leave, "leave-test"
		cfg.Cluster.Lease, cfg.Cluster.BatchDelay = 2*time.Second, 5*time.Millisecond
		a, err := Open(cfg, progress)
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		return a
	}
	run := func(a *Agent, ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		return done
	}
	wait := func(done chan error, what string) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not return within a minute", what)
			return nil
		}
	}
	a1 := open(0, 20*time.Second, io.Discard)
	n1 := a1.node         // the run sets a1.node to nil as it closes
	done1 := run(a1, ctx) // cancelled at the test's end only
	a2 := open(1, time.Nanosecond, io.Discard)
	ctx2, sigterm := context.WithCancel(context.Background())
	done2 := run(a2, ctx2)
	for deadline := time.Now().Add(20 * time.Second); !a2.clusterIn.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a2 never got the view")
		}
	}
	sigterm()
	if err := wait(done2, "a2's leave"); !errors.Is(err, errLeaveTimeout) || errors.Is(err, ErrUsage) {
		t.Fatalf("a2's leave past --leave-timeout: %v, want errLeaveTimeout and no usage error", err)
	}
	if events, _ := os.ReadFile(filepath.Join(dir, "a2", "logs", "events.jsonl")); strings.Contains(string(events), "resuming the leave") {
		t.Error("a2 took the leave it began on SIGTERM for one an earlier process began")
	}
	for deadline := time.Now().Add(10 * time.Second); aliveIn(a1, "a2"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a1 still sees a2 alive after its leave timed out")
		}
	}
	// a2's keys are still its own, or a1 awaits their release.
	if _, awaits := n1.Awaiting()["a2"]; !awaits && !n1.View().Has("a2") {
		t.Fatalf("a1's view is without a2 and a1 awaits nothing of it: %s", n1.View())
	}
	select {
	case err := <-done1:
		t.Fatalf("a1 ended the crawl without a2 (%v)", err)
	default:
	}

	a2 = open(1, 20*time.Second, io.Discard)
	if !a2.node.IsLeaving() {
		t.Fatal("a2's state does not say its leave is to resume")
	}
	if err := wait(run(a2, context.Background()), "a2's resumed leave"); err != nil {
		t.Fatalf("a2's resumed leave: %v", err)
	}
	if v := n1.View(); v.Has("a2") {
		t.Errorf("a2's resumed leave returned, and a1's view still has it: %s", v)
	}
	if err := wait(done1, "a1's crawl"); err != nil {
		t.Fatalf("a1: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a1", "state", "FINISHED")); err != nil {
		t.Errorf("a1 did not end the crawl: %v", err)
	}
	checkOnce(t, w)
}

// checkOnce checks that every expected page of w was fetched, once.
func checkOnce(t *testing.T, w *testweb.Web) {
	t.Helper()
	seen := map[string]int{}
	for _, h := range w.Hits() {
		if h.Path != "/robots.txt" {
			seen[h.Host+h.Path]++
		}
	}
	for _, raw := range w.Expected() {
		u, err := urlx.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if n := seen[u.Hostname()+u.PathQuery]; n != 1 {
			t.Errorf("%s fetched %d times, want once", raw, n)
		}
	}
}

// logTail returns the last lines of the named agents' event logs.
func logTail(dir string, names ...string) string {
	var out []string
	for _, name := range names {
		b, _ := os.ReadFile(filepath.Join(dir, name, "logs", "events.jsonl"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		out = append(out, "--- "+name)
		out = append(out, lines[max(0, len(lines)-40):]...)
	}
	return strings.Join(out, "\n")
}

// aliveIn reports whether agent a reads name's lease live in etcd.
func aliveIn(a *Agent, name string) bool { return a.clusterNode.Load().Alive(name) }

// coordinatorOf is --coordinators for the agent name at bind.
func coordinatorOf(name, bind string) string {
	return coord.AgentCoordinator(name, netip.MustParseAddrPort(bind)).String()
}

// clusterBind returns a loopback IP:PORT whose port and the next one (the
// exchange's) are free for TCP and UDP.
func clusterBind(t *testing.T) string {
	t.Helper()
	for range 100 {
		ip := netip.AddrFrom4([4]byte{127, 94, byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
		port := 10000 + rand.IntN(20000)
		free := true
		for _, p := range []int{port, port + 1, port + 2, port + 3} {
			a := netip.AddrPortFrom(ip, uint16(p)).String()
			if l, err := net.Listen("tcp", a); err == nil {
				l.Close()
			} else {
				free = false
			}
			if c, err := net.ListenPacket("udp", a); err == nil {
				c.Close()
			} else {
				free = false
			}
		}
		if free {
			return netip.AddrPortFrom(ip, uint16(port)).String()
		}
	}
	t.Fatal("no free port pair on 127.94.0.0/16")
	return ""
}
