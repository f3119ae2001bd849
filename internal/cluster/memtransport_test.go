package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// memNetwork connects agents by name inside one process, as hashicorp/raft's
// InmemTransport and memberlist's MockNetwork do: a call is its receiver's
// method called at once, so the answers are the receiver's own —
// acknowledged once the batch is fsynced in its inbox, 503 for
// back-pressure, 409 for a stale view, 400 for a malformed batch. The test
// cuts an agent off (a network error for every call to it) or loses the
// next acknowledgements of batches to it (delivered, answer lost), and
// waits for calls instead of sleeping.
type memNetwork struct {
	mu       sync.Mutex
	peers    map[string]Receiver
	down     map[string]bool
	loseAcks map[string]int
	cutAfter map[string]bool // cut the agent off once an answer to it is lost
	calls    []memCall
	called   chan struct{} // closed and replaced at every call
}

// memCall is a call (a batch or a hand-off part) as the sender saw it.
type memCall struct {
	to  string
	err error
}

var (
	errUnreachable = errors.New("memnet: agent unreachable")
	errAckLost     = errors.New("memnet: acknowledgement lost")
)

func newMemNetwork() *memNetwork {
	return &memNetwork{peers: map[string]Receiver{}, down: map[string]bool{}, loseAcks: map[string]int{}, cutAfter: map[string]bool{}, called: make(chan struct{})}
}

func (m *memNetwork) transport(name string) Transport { return &memTransport{net: m, name: name} }

// setDown cuts the agent off, or connects it again.
func (m *memNetwork) setDown(name string, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[name] = down
}

// loseNextAcks loses the answers of the next k batches delivered to name;
// with cut, name is cut off once they are lost (a crash after the fsync).
func (m *memNetwork) loseNextAcks(name string, k int, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loseAcks[name] += k
	m.cutAfter[name] = cut
}

// count returns the batch calls to name that ended with an error like
// want (nil: acknowledged).
func (m *memNetwork) count(to string, want error) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := 0
	for _, c := range m.calls {
		if c.to == to && (c.err == want || want != nil && errors.Is(c.err, want)) {
			k++
		}
	}
	return k
}

// countStatus counts the batch calls to name answered with code.
func (m *memNetwork) countStatus(to string, code int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := 0
	for _, c := range m.calls {
		if _, ok := isStatus(c.err, code); ok && c.to == to {
			k++
		}
	}
	return k
}

// waitCalls blocks until cond holds, checked at every call.
func (m *memNetwork) waitCalls(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitChanged(t, what, func() <-chan struct{} {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.called
	}, cond)
}

// waitChanged blocks until cond holds, checked whenever the channel
// changed returns (taken before each check) is closed, for at most a
// minute.
func waitChanged(t *testing.T, what string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	limit := time.After(time.Minute)
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-limit:
			t.Fatalf("%s: not after a minute", what)
		}
	}
}

func (m *memNetwork) note(to string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) < 1<<16 {
		m.calls = append(m.calls, memCall{to, err})
	}
	close(m.called)
	m.called = make(chan struct{})
}

// receiver returns name's receiver, or a network error.
func (m *memNetwork) receiver(name string) (Receiver, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.peers[name]
	if r == nil || m.down[name] {
		return nil, errUnreachable
	}
	return r, nil
}

type memTransport struct {
	net  *memNetwork
	name string
}

func (t *memTransport) Listen(r Receiver) error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	t.net.peers[t.name] = r
	return nil
}

func (t *memTransport) Refused() int64 { return 0 }

func (t *memTransport) Close() error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	delete(t.net.peers, t.name)
	return nil
}

func (t *memTransport) SendBatch(ctx context.Context, to Peer, wire []byte) error {
	err := t.sendBatch(ctx, to, wire)
	t.net.note(to.Name, err)
	return err
}

func (t *memTransport) sendBatch(ctx context.Context, to Peer, wire []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := t.net.receiver(to.Name)
	if err != nil {
		return err
	}
	// The receiver gets its own bytes, as off a socket.
	if err := r.ReceiveBatch(slices.Clone(wire)); err != nil {
		return err
	}
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.net.loseAcks[to.Name] > 0 {
		t.net.loseAcks[to.Name]--
		if t.net.loseAcks[to.Name] == 0 && t.net.cutAfter[to.Name] {
			t.net.down[to.Name] = true
		}
		return errAckLost
	}
	return nil
}

func (t *memTransport) SendHandoff(ctx context.Context, to Peer, h *Handoff) error {
	err := t.sendHandoff(to, h)
	t.net.note(to.Name, err)
	return err
}

func (t *memTransport) sendHandoff(to Peer, h *Handoff) error {
	r, err := t.net.receiver(to.Name)
	if err != nil {
		return err
	}
	p, err := decodeHandoff(encodeHandoff(h)) // through the wire form
	if err != nil {
		return err
	}
	p.From, p.Epoch, p.Seq = h.From, h.Epoch, h.Seq
	return r.ReceiveHandoff(p)
}

// memNode starts a node on net: no etcd and no socket. The test gives it
// its views (memInstall).
func memNode(t *testing.T, net *memNetwork, name string, host *testHost, opts ...func(*Config)) *Node {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	cfg := Config{Name: name, Bind: netip.MustParseAddrPort("127.0.0.1:9"), Key: testKey, CrawlName: "test",
		Dir: dir, FinishedPath: filepath.Join(dir, "FINISHED"), BatchDelay: time.Hour, Transport: net.transport(name),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(cfg, host)
	if err != nil {
		t.Fatal(err)
	}
	host.node.Store(n)
	t.Cleanup(func() { n.closeParts() })
	return n
}

// memInstall makes the agents of v alive to each node and installs v on
// it, as its watch of etcd would; the node is then ready, its guard open.
func memInstall(t *testing.T, v *View, ns ...*Node) {
	t.Helper()
	for _, n := range ns {
		n.co.mu.Lock()
		n.co.state.Agents = map[string]coord.AgentRecord{}
		for _, a := range v.Agents {
			n.co.state.Agents[a.Name] = coord.AgentRecord{Name: a.Name, Exchange: "mem:" + a.Name}
		}
		n.co.mu.Unlock()
		if err := n.installView(v); err != nil {
			t.Fatal(err)
		}
		n.markReady(v)
		n.guard.open()
	}
}

// appliedOnce fails unless h applied each of want exactly once, and
// nothing else.
func appliedOnce(t *testing.T, who string, h *testHost, want []string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) != len(want) {
		t.Errorf("%s applied %d distinct records, want %d", who, len(h.records), len(want))
	}
	for _, r := range want {
		if c := h.records[r]; c != 1 {
			t.Errorf("%s applied %s %d times, want once", who, r, c)
		}
	}
}
