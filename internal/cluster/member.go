package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Meta is what an agent announces by gossip: small (memberlist caps node
// metadata at 512 bytes), so no view and no settings travel here — only
// where to reach the agent's exchange and the epochs that tell a peer
// when to fetch something from it.
type Meta struct {
	Exchange    string `json:"x"`           // host:port of the exchange
	Weight      uint32 `json:"w,omitempty"` // share of keys (0 = 1)
	ViewEpoch   uint64 `json:"v,omitempty"` // epoch of the agent's ownership view (0: none yet)
	Incarnation uint64 `json:"i"`           // process starts on its crawl directory
	Finished    bool   `json:"f,omitempty"` // the crawl is over (state/FINISHED)
	Stopping    bool   `json:"s,omitempty"` // a whole-crawl stop was asked
	ConfigEpoch uint64 `json:"c,omitempty"` // epoch of the cluster-wide settings changed live (config.go)
}

// Member is a peer as gossip knows it. Its JSON keys are its field names
// (petrel cluster status reads them; docs/cluster.md lists them).
type Member struct {
	Name  string
	Addr  string // membership address
	State string // alive, dead, left; in a Status also suspect (heard.go)
	Meta  Meta
	// LastHeard, in a Status, is when the answering agent last heard from
	// it (heard.go). Zero: not yet.
	LastHeard time.Time
}

// Timing scales memberlist's failure detector. Probe is the probe
// interval (memberlist's LAN default is 1 s); every other interval and
// timeout follows from it, so that tests on loopback can run in
// milliseconds with the same proportions.
type Timing struct {
	Probe time.Duration
}

// SuspicionTimeout is how long a member stays suspect before it is
// declared dead, for a cluster of n members (memberlist's formula with
// SuspicionMult 4).
func (t Timing) SuspicionTimeout(n int) time.Duration {
	return suspicionTimeout(4, n, t.probe())
}

func suspicionTimeout(mult, n int, interval time.Duration) time.Duration {
	scale := 1.0
	for k := n + 1; k >= 10; k /= 10 {
		scale++
	}
	return time.Duration(float64(mult) * scale * float64(interval))
}

func (t Timing) probe() time.Duration {
	if t.Probe <= 0 {
		return time.Second
	}
	return t.Probe
}

// membership wraps memberlist: it encrypts gossip with the key, labels
// every packet with the crawl's name, and keeps the local metadata.
type membership struct {
	ml  *memberlist.Memberlist
	log *slog.Logger

	mu     sync.Mutex
	meta   Meta
	known  map[string]Member // from memberlist's events (see members)
	events chan struct{}     // a member joined, left or changed (coalesced)

	heardFrom // under mu (heard.go)

	onRound atomic.Pointer[func()] // called when a probe of another member is answered (Guard.Round)

	// gossipMu serializes UpdateNode: memberlist reads this node's own
	// address outside its lock there while a concurrent UpdateNode writes
	// it under the lock, so two at once race.
	gossipMu sync.Mutex
}

func startMembership(name string, bind netip.AddrPort, label string, key Key, t Timing, meta Meta, logger *slog.Logger) (*membership, error) {
	m := &membership{meta: meta, log: logger, known: map[string]Member{}, events: make(chan struct{}, 1),
		heardFrom: heardFrom{at: map[string]time.Time{}, suspects: map[string]bool{}}}
	c := memberlist.DefaultLANConfig()
	c.Name = name
	c.BindAddr = bind.Addr().String()
	c.BindPort = int(bind.Port())
	c.AdvertiseAddr = c.BindAddr
	c.AdvertisePort = c.BindPort
	c.Label = label
	c.SecretKey = key.GossipKey()
	c.Delegate = m
	c.Events = m
	c.Ping = m
	p := t.probe()
	c.ProbeInterval = p
	c.ProbeTimeout = p / 2
	c.GossipInterval = p / 5
	c.PushPullInterval = 30 * p
	c.GossipToTheDeadTime = 30 * p
	c.TCPTimeout = max(10*p, 200*time.Millisecond)
	c.DeadNodeReclaimTime = 10 * p // a restarted agent reuses its name
	c.Alive = m
	c.Logger = log.New(slogWriter{l: logger, suspect: m.suspected}, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		return nil, fmt.Errorf("cluster: membership on %s: %w", bind, err)
	}
	m.ml = ml
	return m, nil
}

// setMeta changes the local metadata and gossips it, waiting a moment
// for the broadcast to leave (memberlist's UpdateNode with no timeout
// waits for ever when no peer takes it). Calls are serialized.
func (m *membership) setMeta(f func(*Meta)) {
	m.gossipMu.Lock()
	defer m.gossipMu.Unlock()
	m.mu.Lock()
	f(&m.meta)
	m.mu.Unlock()
	if err := m.ml.UpdateNode(500 * time.Millisecond); err != nil {
		m.log.Warn("cluster: gossip metadata", "err", err)
	}
}

func (m *membership) localMeta() Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta
}

// members lists every member memberlist told of, with its state (alive, or
// dead or left after a NotifyLeave), sorted by name. It is kept from the
// event callbacks, which memberlist calls under its own lock: the nodes
// that Memberlist.Members returns are changed in place by its goroutines,
// so reading them races.
func (m *membership) members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.known))
	for _, mb := range m.known {
		out = append(out, mb)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (m *membership) record(n *memberlist.Node, state string) {
	mb := Member{Name: n.Name, Addr: n.Address(), State: state}
	json.Unmarshal(n.Meta, &mb.Meta)
	m.mu.Lock()
	m.known[n.Name] = mb
	m.noteEvent(n.Name, state) // heard.go
	m.mu.Unlock()
	m.notify()
}

func (m *membership) leave(timeout time.Duration) {
	if err := m.ml.Leave(timeout); err != nil {
		m.log.Warn("cluster: leave", "err", err)
	}
	m.ml.Shutdown()
}

func (m *membership) notify() {
	select {
	case m.events <- struct{}{}:
	default:
	}
}

// memberlist.Delegate

func (m *membership) NodeMeta(limit int) []byte {
	b, _ := json.Marshal(m.localMeta())
	if len(b) > limit {
		return nil
	}
	return b
}
func (m *membership) NotifyMsg([]byte)                           {}
func (m *membership) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (m *membership) LocalState(join bool) []byte                { return nil }
func (m *membership) MergeRemoteState(buf []byte, join bool)     {}

// memberlist.PingDelegate: an answered probe is a completed gossip round.

func (m *membership) AckPayload() []byte { return nil }
func (m *membership) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	m.heard(other.Name)
	if f := m.onRound.Load(); f != nil {
		(*f)()
	}
}

// memberlist.EventDelegate

func (m *membership) NotifyJoin(n *memberlist.Node)   { m.record(n, "alive") }
func (m *membership) NotifyUpdate(n *memberlist.Node) { m.record(n, "alive") }
func (m *membership) NotifyLeave(n *memberlist.Node) {
	// memberlist passes the Node embedded in its node state, whose own
	// State it does not update (it sets the outer one): a leave is a
	// death unless the Node says left.
	state := "dead"
	if n.State == memberlist.StateLeft {
		state = "left"
	}
	m.record(n, state)
}

// slogWriter turns memberlist's log lines into debug records (warnings and
// errors at their level). With suspect set, it is told the name in
// memberlist's line on suspecting a member (heard.go).
type slogWriter struct {
	l       *slog.Logger
	suspect func(name string)
}

func (w slogWriter) Write(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	if name, ok := suspectLine(s); ok && w.suspect != nil {
		w.suspect(name)
	}
	switch {
	case strings.Contains(s, "[ERR]"):
		w.l.Error("memberlist", "msg", s)
	case strings.Contains(s, "[WARN]"):
		w.l.Warn("memberlist", "msg", s)
	default:
		w.l.Debug("memberlist", "msg", s)
	}
	return len(b), nil
}

var _ io.Writer = slogWriter{}
