package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// testHost is an agent's frontier reduced to what the node sees, the one
// Host of this package's tests. It records the batches applied (their
// records, the largest, the view epoch held at each), the hand-off parts
// applied and the holds resumed at a start, and the cluster-wide values
// committed; it is idle when told so, refuses a value of "bad" for the
// setting named guard, and re-routes by its node's view (a record's group
// is the record itself).
type testHost struct {
	node         atomic.Pointer[Node] // set by startNode before the node follows the crawl
	busy         atomic.Bool
	stops        atomic.Int32
	guard        string        // setting whose value "bad" PrepareConfig refuses
	handoffDelay time.Duration // ApplyHandoff's wait (to make a part sent twice at once overlap)

	mu        sync.Mutex
	records   map[string]int
	order     []string         // the records in the order applied
	applied   chan struct{}    // closed and replaced at every Apply
	largest   int              // records of the largest batch applied
	epochs    []uint64         // the view epoch held at each batch applied
	parts     []string         // hand-off parts applied, "from/epoch/seq"
	counts    map[uint64]int64 // the counts those parts added, by count key
	resumed   []PendingHold
	notBefore map[string]time.Time
	values    map[string]any // the cluster-wide values committed last
	configs   []uint64       // the config epochs committed
}

func newTestHost() *testHost {
	return &testHost{records: map[string]int{}, counts: map[uint64]int64{}, applied: make(chan struct{})}
}

var _ Host = (*testHost)(nil)

func (h *testHost) Apply(b *Batch) error {
	var epoch uint64
	if n := h.node.Load(); n != nil {
		epoch = n.viewEpoch()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.largest = max(h.largest, len(b.Records))
	h.epochs = append(h.epochs, epoch)
	for _, r := range b.Records {
		h.records[string(r)]++
		h.order = append(h.order, string(r))
	}
	close(h.applied)
	h.applied = make(chan struct{})
	return nil
}

// waitApplied blocks until cond holds, checked at every Apply.
func (h *testHost) waitApplied(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitChanged(t, what, func() <-chan struct{} {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.applied
	}, cond)
}

func (h *testHost) Idle() bool         { return !h.busy.Load() }
func (h *testHost) Stop(string)        { h.stops.Add(1) }
func (h *testHost) Progress() Progress { return Progress{} }

func (h *testHost) Owner(_ Kind, rec []byte) string {
	n := h.node.Load()
	if n == nil || n.View() == nil {
		return ""
	}
	if o := n.View().Owner(string(rec)); o != n.Name() {
		return o
	}
	return ""
}

func (h *testHost) ViewChanged(ViewChange) {}

func (h *testHost) ResumeHolds(holds []PendingHold, notBefore map[string]time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resumed, h.notBefore = holds, notBefore
}

func (h *testHost) ApplyHandoff(p *Handoff) error {
	time.Sleep(h.handoffDelay)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.parts = append(h.parts, p.ID())
	for k, v := range p.Counts {
		h.counts[k] += v
	}
	return nil
}

func (h *testHost) PrepareConfig(values map[string]any) error {
	if h.guard != "" && values[h.guard] == "bad" {
		n := h.node.Load()
		return fmt.Errorf("--%s: %q is not a duration (agent %s)", h.guard, values[h.guard], n.Name())
	}
	return nil
}

func (h *testHost) CommitConfig(_ context.Context, epoch uint64, values map[string]any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values = maps.Clone(values)
	h.configs = append(h.configs, epoch)
	return nil
}

func (h *testHost) WhyJSON(_ context.Context, url string, local bool) ([]byte, error) {
	return json.Marshal(map[string]any{"url": url, "local": local})
}

// count returns the distinct records applied.
func (h *testHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.records)
}

// config returns the cluster-wide values committed last and the epochs
// committed.
func (h *testHost) config() (map[string]any, []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.values), slices.Clone(h.configs)
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
	for _, q := range []int{p, p + 1, p + 2, p + 3} {
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

// testCoordinators maps a coordinating test node's address to its
// coordinator (tests name the node to join by its address).
var testCoordinators sync.Map

// startNode starts a node; with join nil it runs the crawl's one etcd
// member (on its address's port + 2), else it uses the member of the
// node at join[0].
func startNode(t *testing.T, name string, key Key, join []string, wait int, host *testHost, settings [][2]string, opts ...func(*Config)) (*Node, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	bind := freeAddr(t)
	var co coord.Coordinator
	if len(join) == 0 {
		co = coord.AgentCoordinator(name, bind)
		testCoordinators.Store(bind.String(), co)
	} else {
		v, ok := testCoordinators.Load(join[0])
		if !ok {
			t.Fatalf("no coordinator at %s", join[0])
		}
		co = v.(coord.Coordinator)
	}
	cfg := Config{Name: name, Bind: bind, Key: key, Wait: wait, Coordinators: []coord.Coordinator{co},
		LeaseTTL: 2 * time.Second, Settle: 50 * time.Millisecond, CrawlName: "test",
		Dir: dir, FinishedPath: filepath.Join(dir, "FINISHED"),
		Settings: settings, BatchDelay: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(cfg, host)
	if err == nil {
		host.node.Store(n)
		n.Follow()
		t.Cleanup(func() { n.closeParts() }) // before its directory goes
	}
	return n, err
}

func mustNode(t *testing.T, name string, join []string, wait int, host *testHost) *Node {
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
	t.Parallel() // waits on leases and views more than it computes
	ha, hb := newTestHost(), newTestHost()
	ha.busy.Store(true)
	a := mustNode(t, "a", nil, 2, ha)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	waitReady(t, a, b)
	if !slices.Equal(a.View().Names(), []string{"a", "b"}) || b.View().String() != a.View().String() {
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
	t.Parallel() // waits on leases and views more than it computes
	ha, hb := newTestHost(), newTestHost()
	hb.busy.Store(true)
	a, err := startNode(t, "a", testKey, nil, 2, ha, [][2]string{{"assign", "authority"}}, func(c *Config) { c.Grace = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, "b", testKey, []string{a.cfg.Bind.String()}, 2, hb, [][2]string{{"assign", "authority"}}, func(c *Config) { c.Grace = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, a, b)
	v1 := a.View()
	select {
	case <-a.Finished():
		t.Fatal("finished while b is busy")
	case <-time.After(500 * time.Millisecond):
	}
	// b dies (no leave): its work keeps the crawl open, before and after
	// the takeover that lists it absent.
	b.cancel()
	b.tr.(*httpTransport).server.Close()
	hb.busy.Store(false)
	deadline := time.Now().Add(15 * time.Second)
	for a.View().Epoch == v1.Epoch {
		select {
		case <-a.Finished():
			t.Fatal("finished while b is dead")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no takeover of b's keys")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := a.View(); v.Has("b") || !slices.Equal(v.Absent, []string{"b"}) {
		t.Fatalf("view after b's death: %s", v)
	}
	select {
	case <-a.Finished():
		t.Fatal("finished while b is absent")
	case <-time.After(700 * time.Millisecond):
	}
	if _, err := Forget(context.Background(), crawlOf(a), "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Finished():
	case <-time.After(10 * time.Second):
		t.Fatalf("not finished after forgetting b; view %s", a.View())
	}
	if v := a.View(); !slices.Equal(v.Names(), []string{"a"}) || len(v.Absent) != 0 {
		t.Errorf("view after forgetting b: %s, want a alone", v)
	}
	b.closeParts()
	a.Close(100 * time.Millisecond)
}

// An agent with another key is refused at once, one whose settings
// differ with the first difference; neither becomes a member.
func TestWrongKeyAndSettingsRefused(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
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
	start := time.Now()
	wantRefused(t, x, "another key", "refused", "do not hold this crawl's key", "(a wrong --cluster-key-file")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal of another key took %s", d)
	}
	x.Close(0)
	n, err := startNode(t, "y", testKey, []string{a.cfg.Bind.String()}, 2, newTestHost(), [][2]string{{"assign", "host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(0)
	wantRefused(t, n, "other settings", `refused by the crawl`, `--assign "host" here, "authority" in the crawl`)
	st, _ := a.crawlState()
	for name := range st.Agents {
		if name == "x" || name == "y" {
			t.Fatalf("a refused agent became a member: %s", name)
		}
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

// TestJoinWaitsForPeersNotAnswering: an agent whose coordinators have
// nobody listening, or a listener that never answers (a stopped agent),
// keeps waiting: only a refusal ends it.
func TestJoinWaitsForPeersNotAnswering(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	// A listener that never accepts: the kernel completes the handshakes.
	stalled, err := net.Listen("tcp", freeAddr(t).String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	cs := []coord.Coordinator{{Name: "gone", Client: freeAddr(t)}, {Name: "stalled", Client: netip.MustParseAddrPort(stalled.Addr().String())}, {Name: "z", Client: freeAddr(t)}}
	z, err := startNode(t, "z", testKey, nil, 2, newTestHost(), nil, func(c *Config) { c.Coordinators = cs })
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close(0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := z.WaitReady(ctx); err != context.DeadlineExceeded {
		t.Fatalf("WaitReady with no quorum: %v, want the deadline", err)
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
	t.Parallel() // waits on leases and views more than it computes
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
	// A refusal for an older view crosses HTTP/2 with the fence's epoch.
	fence := b.View().Epoch + 1
	b.fence.mu.Lock()
	b.fence.epoch = fence
	b.fence.mu.Unlock()
	bt.ID.Seq, bt.Epoch = 2, b.View().Epoch
	wire, _ = bt.Encode(nil, nil)
	if se, ok := isStatus(c.SendBatch(context.Background(), addr, wire), http.StatusConflict); !ok || se.View != fence {
		t.Fatalf("a batch older than the fence: %v, want 409 naming epoch %d", se, fence)
	}
	if s := b.Status(); s.RefusedBatches != 1 {
		t.Fatalf("refused %d batches for their view, want 1", s.RefusedBatches)
	}
}

// waitEpoch waits until every node holds a view of epoch at least e.
func waitEpoch(t *testing.T, e uint64, within time.Duration, ns ...*Node) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, n := range ns {
		for n.View().Epoch < e {
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %s, not epoch %d yet", n.Name(), n.View(), e)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestIncarnationFailsClosed: an incarnation file that does not hold a
// number stops the start with a message naming it, instead of counting
// again from 1 (the receivers would drop the agent's new batches as seen).
func TestIncarnationFailsClosed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "incarnation")
	if inc, err := bumpIncarnation(path); err != nil || inc != 1 {
		t.Fatalf("first start: %d, %v", inc, err)
	}
	if inc, err := bumpIncarnation(path); err != nil || inc != 2 {
		t.Fatalf("second start: %d, %v", inc, err)
	}
	for _, bad := range []string{"", "x7\n", "0\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if inc, err := bumpIncarnation(path); err == nil || !contains(err.Error(), path) || !contains(err.Error(), "is unreadable") {
			t.Errorf("incarnation file %q: %d, %v; want an error naming the file", bad, inc, err)
		}
	}
}

// TestLeaseFileFailsClosed: a lease file that does not hold a lease id
// stops the agent at its start with a message naming the file, as every
// state file the cluster reads does.
func TestLeaseFileFailsClosed(t *testing.T) {
	t.Parallel() // waits on etcd's start more than it computes
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, leaseFile), []byte("12ab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := startNode(t, "a", testKey, nil, 1, newTestHost(), [][2]string{{"assign", "authority"}},
		func(c *Config) { c.Dir = dir })
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(0)
	wantRefused(t, n, "an unreadable lease file", filepath.Join(dir, leaseFile), "is unreadable", "remove it to start anyway")
}
