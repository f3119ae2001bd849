package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// childSpec is what a child node (childNode) is told.
type childSpec struct {
	Name, Bind   string
	Join         []string
	Wait         int
	Probe, Grace time.Duration
}

// childNode runs a node of a crawl (a busy host: the crawl never ends)
// until its standard input closes; it writes dir/ready once it has the view.
func childNode(dir, spec string) {
	die := func(err error) {
		fmt.Fprintln(os.Stderr, "child node:", err)
		os.Exit(1)
	}
	var s childSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		die(err)
	}
	h := newTestHost()
	h.busy.Store(true)
	n, err := Start(Config{Name: s.Name, Bind: netip.MustParseAddrPort(s.Bind), Join: s.Join, Key: testKey, Wait: s.Wait,
		Dir: dir, FinishedPath: filepath.Join(dir, "FINISHED"), Timing: Timing{Probe: s.Probe}, Grace: s.Grace,
		Settings: [][2]string{{"assign", "authority"}}, BatchDelay: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}, h)
	if err != nil {
		die(err)
	}
	if _, err := n.WaitReady(n.ctx); err != nil {
		die(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		die(err)
	}
	io.Copy(io.Discard, os.Stdin)
	n.Close(0)
}

// logWatch is a slog handler that notes which of its texts some record's
// attribute (memberlist's line) held.
type logWatch map[string]*atomic.Bool

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w logWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w logWatch) WithGroup(string) slog.Handler            { return w }
func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		for text, saw := range w {
			if strings.Contains(a.Value.String(), text) {
				saw.Store(true)
			}
		}
		return true
	})
	return nil
}

// TestBriefSuspicionKeepsView: in a crawl of three agents (a and c here,
// b a child process), b is stopped (SIGSTOP) for three probe intervals —
// long enough for memberlist to suspect it (a's log says so), shorter
// than G/2 and than a failed probe plus the suspicion timeout (five
// intervals) — and resumed. It refutes the suspicion; no agent makes a new
// view, though a and c are a majority that would take a dead b's keys
// over after G: the view stays epoch 1 with nobody absent, past G after
// the pause. The pause is tried again (three times at most) when it fell
// between two probes of b and nobody suspected it.
func TestBriefSuspicionKeepsView(t *testing.T) {
	const probe, grace = 200 * time.Millisecond, 3 * time.Second
	var suspected, failed atomic.Bool
	watch := logWatch{"Suspect b has failed": &suspected, "Marking b as failed": &failed}
	timing := func(c *Config) { c.Timing, c.Grace = Timing{Probe: probe}, grace }
	settings := [][2]string{{"assign", "authority"}}
	ha, hc := newTestHost(), newTestHost()
	ha.busy.Store(true) // the crawl never ends by itself
	a, err := startNode(t, "a", testKey, nil, 3, ha, settings, timing, func(c *Config) {
		c.Logger = slog.New(watch)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(0)
	join := []string{a.cfg.Bind.String()}
	c, err := startNode(t, "c", testKey, join, 3, hc, settings, timing)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(0)
	b := startChildNode(t, childSpec{Name: "b", Bind: freeAddr(t).String(), Join: join, Wait: 3, Probe: probe, Grace: grace})
	waitReady(t, a, c)
	if v := a.View(); v.String() != "epoch 1: a, b, c" {
		t.Fatalf("view %s, want epoch 1: a, b, c", v)
	}
	for try := 0; try < 3 && !suspected.Load(); try++ { // bounded: a pause may fall between two probes of b
		b.Signal(syscall.SIGSTOP)
		time.Sleep(3 * probe)
		b.Signal(syscall.SIGCONT)
		time.Sleep(2 * probe)
	}
	if !suspected.Load() {
		t.Fatal("three pauses of b and memberlist never suspected it")
	}
	if failed.Load() {
		t.Log("memberlist declared b dead before its refutation reached a (a loaded machine)")
	}
	time.Sleep(grace + 4*probe) // a takeover of a dead b would have been made by now
	for _, n := range []*Node{a, c} {
		if v := n.View(); v.Epoch != 1 || len(v.Absent) > 0 {
			t.Errorf("%s made a new view after b's brief suspicion: %s (absent %v)", n.Name(), v, v.Absent)
		}
	}
	if !a.aliveNames()["b"] {
		t.Error("b is not alive for a after its refutation")
	}
}

// startChildNode starts a node as a child process (this test binary) and
// waits until it has its view; the test's end closes its standard input
// and reaps it.
func startChildNode(t *testing.T, s childSpec) *os.Process {
	t.Helper()
	spec, _ := json.Marshal(s)
	cmd := exec.Command(os.Args[0])
	dir := t.TempDir()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close() // the child holds its own descriptor
	cmd.Env = append(os.Environ(), "PETREL_CLUSTER_CHILD=node", "PETREL_CLUSTER_DIR="+dir, "PETREL_CLUSTER_NODE="+string(spec))
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(syscall.SIGCONT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(stderr.Name())
			t.Fatalf("child node %s not ready\n%s", s.Name, out)
		}
	}
	return cmd.Process
}
