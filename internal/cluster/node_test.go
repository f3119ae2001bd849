package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testHost is an agent's frontier reduced to what the node sees: it
// records the applied records and is idle when told so.
type testHost struct {
	mu      sync.Mutex
	records map[string]int
	busy    atomic.Bool
	stops   atomic.Int32
}

func newTestHost() *testHost { return &testHost{records: map[string]int{}} }

func (h *testHost) Apply(b *Batch) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range b.Records {
		h.records[string(r)]++
	}
	return nil
}
func (h *testHost) Idle() bool         { return !h.busy.Load() }
func (h *testHost) Stop(string)        { h.stops.Add(1) }
func (h *testHost) Progress() Progress { return Progress{} }

func (h *testHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.records)
}

// freeAddr returns a loopback address whose port and port+1 are free for
// TCP and UDP. The address is a random one of 127.0.0.0/8 and the port is
// below Linux's ephemeral range (32768 and up), so neither another test's
// listener nor an outgoing connection's local port is likely to hold it.
func freeAddr(t testing.TB) netip.AddrPort {
	t.Helper()
	for i := 0; i < 200; i++ {
		ip := netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
		p := 10000 + rand.IntN(20000)
		if portPairFree(ip, p) {
			return netip.AddrPortFrom(ip, uint16(p))
		}
	}
	t.Fatal("no free port pair on 127.0.0.0/8 in 200 tries")
	return netip.AddrPort{}
}

// portPairFree reports whether ports p and p+1 of ip can be bound for TCP
// and for UDP.
func portPairFree(ip netip.Addr, p int) bool {
	for _, q := range []int{p, p + 1} {
		a := netip.AddrPortFrom(ip, uint16(q)).String()
		tl, err := net.Listen("tcp", a)
		if err != nil {
			return false
		}
		tl.Close()
		ul, err := net.ListenPacket("udp", a)
		if err != nil {
			return false
		}
		ul.Close()
	}
	return true
}

var testKey = func() Key {
	var k Key
	copy(k[:], "petrel test key, 32 bytes long!!")
	return k
}()

func startNode(t *testing.T, name string, key Key, join []string, wait int, host Host, settings [][2]string, opts ...func(*Config)) (*Node, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	cfg := Config{Name: name, Bind: freeAddr(t), Join: join, Key: key, Wait: wait,
		Dir: dir, FinishedPath: filepath.Join(dir, "FINISHED"), Timing: Timing{Probe: 100 * time.Millisecond},
		Settings: settings, BatchDelay: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for _, o := range opts {
		o(&cfg)
	}
	return Start(cfg, host)
}

func mustNode(t *testing.T, name string, join []string, wait int, host Host) *Node {
	t.Helper()
	n, err := startNode(t, name, testKey, join, wait, host, [][2]string{{"assign", "authority"}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitReady(t *testing.T, ns ...*Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range ns {
		if _, err := n.WaitReady(ctx); err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
	}
}

func TestExchangeDeliversAndTerminates(t *testing.T) {
	ha, hb := newTestHost(), newTestHost()
	ha.busy.Store(true)
	a := mustNode(t, "a", nil, 2, ha)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	waitReady(t, a, b)
	if a.View().String() != "epoch 1: a, b" || b.View().String() != a.View().String() {
		t.Fatalf("views: %s / %s", a.View(), b.View())
	}
	const n = 50_000
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if err := a.Route("b", KindURLs, fmt.Appendf(nil, "http://h%d.test/p%d", i%97, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	ha.busy.Store(false)
	for _, nd := range []*Node{a, b} {
		select {
		case <-nd.Finished():
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: crawl not declared finished; status %+v", nd.Name(), nd.Status())
		}
	}
	if got := hb.count(); got != n {
		t.Fatalf("b applied %d distinct records, want %d", got, n)
	}
	hb.mu.Lock()
	for r, c := range hb.records {
		if c != 1 {
			t.Fatalf("%s applied %d times", r, c)
		}
	}
	hb.mu.Unlock()
	for _, nd := range []*Node{a, b} {
		if _, err := os.Stat(nd.cfg.FinishedPath); err != nil {
			t.Errorf("%s: %v", nd.Name(), err)
		}
		if err := nd.Close(time.Second); err != nil {
			t.Error(err)
		}
	}
	// A start on a finished crawl says so.
	if _, err := Start(a.cfg, ha); err != ErrFinished {
		t.Errorf("start after the end: %v, want ErrFinished", err)
	}
}

func TestTerminationWaitsForBusyAndAbsent(t *testing.T) {
	ha, hb := newTestHost(), newTestHost()
	hb.busy.Store(true)
	a := mustNode(t, "a", nil, 2, ha)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	waitReady(t, a, b)
	select {
	case <-a.Finished():
		t.Fatal("finished while b is busy")
	case <-time.After(500 * time.Millisecond):
	}
	// b dies (no leave): its work keeps the crawl open.
	b.members.ml.Shutdown()
	b.server.Close()
	hb.busy.Store(false)
	select {
	case <-a.Finished():
		t.Fatal("finished while b is absent")
	case <-time.After(700 * time.Millisecond):
	}
	// Two agents: no majority, so no takeover by itself; forgetting b
	// (a takeover, then a view without it) lets the crawl end.
	deadline := time.Now().Add(10 * time.Second)
	for a.aliveNames()["b"] {
		if time.Now().After(deadline) {
			t.Fatal("b never declared dead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := a.View(); v.Epoch != 1 {
		t.Fatalf("a took b's keys over without a majority: %s", v)
	}
	if _, err := a.Forget(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Finished():
	case <-time.After(10 * time.Second):
		t.Fatalf("not finished after forgetting b; view %s", a.View())
	}
	if v := a.View(); v.String() != "epoch 3: a" {
		t.Errorf("view after forgetting b: %s, want epoch 3: a", v)
	}
	b.closeParts()
	a.Close(100 * time.Millisecond)
}

func TestWrongKeyAndSettingsRefused(t *testing.T) {
	ha := newTestHost()
	ha.busy.Store(true) // the crawl goes on while the others knock
	a := mustNode(t, "a", nil, 1, ha)
	defer a.Close(100 * time.Millisecond)
	waitReady(t, a)
	var other Key
	copy(other[:], "another key, also 32 bytes long!")
	x, err := startNode(t, "x", other, []string{a.cfg.Bind.String()}, 2, newTestHost(), [][2]string{{"assign", "authority"}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, x, "another key", "join refused by the agent at "+a.cfg.Bind.String(), "(a wrong --cluster-key-file?)")
	x.Close(0)
	// The same key under another crawl name: the gossip label differs.
	xn, err := startNode(t, "xn", testKey, []string{a.cfg.Bind.String()}, 2, newTestHost(), [][2]string{{"assign", "authority"}},
		func(c *Config) { c.CrawlName = "other" })
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, xn, "another crawl name", `its --cluster-name differs from this agent's "other"`)
	xn.Close(0)
	for _, m := range a.members.members() {
		if m.Name == "x" || m.Name == "xn" {
			t.Fatalf("an agent with another key or crawl name became a member: %s", m.Name)
		}
	}
	n, err := startNode(t, "y", testKey, []string{a.cfg.Bind.String()}, 2, newTestHost(), [][2]string{{"assign", "host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = n.WaitReady(ctx)
	if err == nil || !contains(err.Error(), `setting assign: the crawl has "authority", the joining agent "host"`) {
		t.Fatalf("different settings: %v", err)
	}
}

// wantRefused waits for n's WaitReady to fail with every one of want.
func wantRefused(t *testing.T, n *Node, what string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := n.WaitReady(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("an agent with %s was not refused: %v", what, err)
	}
	for _, w := range want {
		if !contains(err.Error(), w) {
			t.Fatalf("agent with %s: %v, want %q", what, err, w)
		}
	}
}

// TestJoinWaitsForPeersNotAnswering: an agent whose --join addresses have
// nobody listening, or a listener that never answers (a stopped agent),
// keeps trying past the rounds that refuse an agent.
func TestJoinWaitsForPeersNotAnswering(t *testing.T) {
	stalled, err := net.Listen("tcp", freeAddr(t).String()) // never accepts: the kernel completes the handshakes
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	z, err := startNode(t, "z", testKey, []string{freeAddr(t).String(), stalled.Addr().String()}, 2, newTestHost(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close(0)
	ctx, cancel := context.WithTimeout(context.Background(), (joinRefusals+2)*10*z.cfg.Timing.probe())
	defer cancel()
	if _, err := z.WaitReady(ctx); err != context.DeadlineExceeded {
		t.Fatalf("WaitReady with no peer answering: %v, want the deadline", err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestForgedAndReplayedBatches(t *testing.T) {
	hb := newTestHost()
	b := mustNode(t, "b", nil, 1, hb)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, b)
	addr := b.cfg.ExchangeAddr()
	bt := &Batch{ID: BatchID{Sender: "a", Incarnation: 1, Seq: 1}, Kind: KindURLs, Records: [][]byte{[]byte("http://x.test/")}}
	wire, _ := bt.Encode(nil, nil)

	var other Key
	copy(other[:], "another key, also 32 bytes long!")
	forger, _ := NewClient(other)
	if err := forger.SendBatch(context.Background(), addr, wire); err == nil {
		t.Fatal("a batch from a client with another key was accepted")
	}
	// No client certificate at all: a plain TLS client is refused too.
	if err := plainTLSPost(addr, wire); err == nil {
		t.Fatal("a batch with no key was accepted")
	}
	c, _ := NewClient(testKey)
	for i := 0; i < 3; i++ { // the first delivery and two replays
		if err := c.SendBatch(context.Background(), addr, wire); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SendBatch(context.Background(), addr, []byte("PTB1garbage")); err == nil {
		t.Fatal("a malformed batch was accepted")
	}
	deadline := time.Now().Add(5 * time.Second)
	for hb.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	s := b.Status()
	if s.AppliedBatches != 1 || s.Duplicates != 2 || s.Refused != 1 {
		t.Fatalf("applied %d, duplicates %d, refused %d; want 1, 2, 1", s.AppliedBatches, s.Duplicates, s.Refused)
	}
}
