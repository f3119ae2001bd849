package e2e

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterLeaveKilledMidHandOff sends SIGTERM to one agent of three
// mid-crawl, after a checkpoint taken on SIGUSR1, and kills it (kill -9, by
// PETREL_CRASH_AT) once the view without it is in force and its queued URLs
// are moved out into its outbox, before its releases. Started again on its
// directory it recovers from the leave's own checkpoint (taken once its
// requests in flight had ended, before anything moved) and resumes its
// leave, exit 0. It moves none of the URLs it restored again that its first
// process had moved (the test checks that there were some), and no page is
// fetched twice; every page is fetched, politely.
func TestClusterLeaveKilledMidHandOff(t *testing.T) {
	leaveKilled(t, "leave-moved", "127.61.14.1", "127.213.14.1")
}

// TestClusterLeaveKilledBeforeCheckpoint is the same leave killed after
// the view without it, its requests in flight ended, before its
// checkpoint: started again it recovers the SIGUSR1 checkpoint. Nothing
// was moved or sent before the kill; the only pages fetched twice are
// those it fetched since that checkpoint (what any kill -9 costs).
func TestClusterLeaveKilledBeforeCheckpoint(t *testing.T) {
	leaveKilled(t, "leave-checkpoint", "127.61.15.1", "127.213.15.1")
}

func leaveKilled(t *testing.T, point, webIP, agentIP string) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 200 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 30, Seed: 41,
		FirstIP: netip.MustParseAddr(webIP)})
	c := newClusterRun(t, web, agentIP, 3)
	c.moved = true
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", leaveTimeout.String())
	leaver := c.agents[1]
	leaver.env = []string{"PETREL_CRASH_AT=" + point + ":1"}
	for _, a := range c.agents {
		c.start(t, a, append(flags, deathUA(a)...)...)
	}
	leaver.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	// A checkpoint with URLs queued, so that the restart has some to restore.
	usr1 := newestCheckpoint(t, leaver).Seq
	leaver.cmd.Process.Signal(syscall.SIGUSR1)
	for deadline := time.Now().Add(10 * time.Second); newestCheckpoint(t, leaver).Seq == usr1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s took no checkpoint on SIGUSR1", leaver.name)
		}
	}
	usr1++
	leaver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leaver.done:
		if err == nil || !strings.Contains(leaver.stderr.String(), "killing myself at "+point) {
			t.Fatalf("the leave was not killed at %s: %v\n%s", point, err, leaver.stderr.String())
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatalf("%s did not reach %s:\n%s", leaver.name, point, leaver.stderr.String())
	}
	killed := time.Now()
	cp := newestCheckpoint(t, leaver)
	leaver.env = nil
	c.start(t, leaver, append(flags, deathUA(leaver)...)...)
	select {
	case err := <-leaver.done:
		leaver.done <- err // for wait below
		if out := leaver.stderr.String(); err != nil || !strings.Contains(out, "resuming the leave") || !strings.Contains(out, "left the crawl: everything handed over") {
			t.Fatalf("resumed leave: %v\n%s", err, out)
		}
	case <-time.After(leaveTimeout + 10*time.Second):
		t.Fatalf("%s did not finish its resumed leave:\n%s", leaver.name, leaver.stderr.String())
	}
	errs := c.wait(t, 90*time.Second)
	for _, a := range c.agents {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	hits := web.web.Hits()
	n := map[string]int{}
	for _, h := range hits {
		if h.Path != "/robots.txt" {
			n[key(h.Host, h.Path)]++
		}
	}
	// A page the leaver fetched since the checkpoint it restored is queued
	// there again; so is one it had begun before and not finished, its
	// response or its parse (cp.Unfinished).
	since := map[string]bool{}
	again := 0
	for _, h := range hits {
		if k := key(h.Host, h.Path); byAgent(h) == leaver.name && h.Path != "/robots.txt" && h.End.After(cp.Taken.Add(-time.Second)) && h.Start.Before(killed) && !since[k] {
			since[k] = true
			if n[k] > 1 {
				again++
			}
		}
	}
	t.Logf("%s restored checkpoint %d (%d unfinished; %d taken on SIGUSR1); of the %d pages it fetched from 1 s before it until the kill, %d were fetched again",
		leaver.name, cp.Seq, cp.Unfinished, usr1, len(since), again)
	c.twiceOK = since
	// The records of what it requested since that checkpoint may be lost
	// with it, as any kill -9's (TestClusterKillAndRestart).
	c.lostReq = cp.Unfinished
	for _, h := range hits {
		if byAgent(h) == leaver.name && !h.Start.Before(cp.Taken) && h.Start.Before(killed) {
			c.lostReq++
		}
	}
	if point == "leave-moved" {
		if cp.Seq <= usr1 {
			t.Errorf("%s restored checkpoint %d, not its leave's (after %d)", leaver.name, cp.Seq, usr1)
		}
		if cp.Unfinished == 0 {
			c.twiceOK = nil // nothing was fetched since the leave's checkpoint
		}
		// The window was reached: the checkpoint restored held URLs that
		// the killed process had moved out already.
		if dropped := notMovedAgain(t, leaver); dropped == 0 {
			t.Error("the restarted leaver dropped no URL moved out before the kill: the kill came before anything was moved")
		} else {
			t.Logf("the restarted leaver did not move again %d URLs its first process had moved", dropped)
		}
	}
	c.judge(t, hostDelay, ipDelay, 2)
}

// notMovedAgain sums what a's event log says it dropped of the URLs an
// earlier process of its leave had moved out.
func notMovedAgain(t *testing.T, a *agentProc) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.dir, "logs", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct {
			Msg  string `json:"msg"`
			URLs int    `json:"urls"`
		}
		if json.Unmarshal(line, &e) == nil && strings.Contains(e.Msg, "URLs not moved again") {
			n += e.URLs
		}
	}
	return n
}
