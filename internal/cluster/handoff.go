package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/notify"
)

// The hand-off of keys and addresses at a view change. For every slot
// whose owner changes, the old owner sends the new one, over the
// exchange: the slot's part of its sieve's seen set and the budget counts
// of its keys (Handoff parts, POST /v1/handoff, acknowledged once the
// receiving host applied them durably), its queued URLs for the addresses
// that move (ready batches through the outbox, like any routed URL), and
// last a release for the epoch carrying each moved address's remaining
// delay. The new owner
//
//   - applies no URL batch while it awaits a release of the current epoch
//     from an old owner (the applier waits before the batch: what it would
//     put through the sieve needs the old owner's seen set first), and
//   - schedules no request to a moved address before that release (the
//     host holds them; see frontier.HoldAddrs).
//
// Invariants:
//   - the senders awaited are those that owned, in the old view, a slot
//     this agent owns in the new one; they, the moves whose addresses are
//     held and the hand-offs this agent gives are saved (awaiting.json,
//     handoffstate.go) before the view is in force, so a restart keeps
//     waiting and holding, and resumes what it was giving;
//   - a part is applied at most once (its id: sender, epoch, sequence;
//     after its epoch's release, the pair sender, epoch);
//   - an agent with a part unsent or a release awaited is not idle
//     (handoffIdle, in status.go's nodeIdle).

// Handoff is one part of a hand-off from an old owner to a new one.
type Handoff struct {
	From    string
	Epoch   uint64 // the view that moved the slots
	View    uint64 // the view the part was cut under (zero: Epoch); older than the receiver's fence, it is refused (fence.go)
	Seq     uint64 // per (From, Epoch, receiver), from 1
	Seen    []uint64
	Counts  map[uint64]int64         // per-key URL counts (budget used), by count key (frontier.Frontier.TakeCounts)
	Release bool                     // the last part: the old owner schedules nothing moved any more
	Waits   map[string]time.Duration // with Release: remaining delay per moved address
}

// cutView is the view the part was cut under.
func (h *Handoff) cutView() uint64 { return max(h.View, h.Epoch) }

// ID is the part's idempotent id, "from/epoch/seq": a receiver applies
// each id once.
func (h *Handoff) ID() string { return fmt.Sprintf("%s/%d/%d", h.From, h.Epoch, h.Seq) }

// SlotSet is a set of slots (a bitset of Slots bits).
type SlotSet []uint64

// NewSlotSet returns an empty set.
func NewSlotSet() SlotSet { return make(SlotSet, Slots/64) }

// Add puts slot in s.
func (s SlotSet) Add(slot uint32) { s[slot/64] |= 1 << (slot % 64) }

// Has reports whether slot is in s.
func (s SlotSet) Has(slot uint32) bool { return s[slot/64]&(1<<(slot%64)) != 0 }

// Moves returns, for each pair of agents, the slots that old gives to the
// first and new to the second: moves[from][to]. It costs one ownership
// decision per slot and view (2^20 each).
func Moves(old, new *View) map[string]map[string]SlotSet {
	out := map[string]map[string]SlotSet{}
	for s := uint32(0); s < Slots; s++ {
		a, b := old.OwnerOfSlot(s), new.OwnerOfSlot(s)
		if a == b {
			continue
		}
		out[a] = orEmpty(out[a])
		if out[a][b] == nil {
			out[a][b] = NewSlotSet()
		}
		out[a][b].Add(s)
	}
	return out
}

// handoffs is a Node's part of hand-offs.
type handoffs struct {
	mu      sync.Mutex
	st      awaitingState // saved in awaiting.json (handoffstate.go)
	changed notify.Signal // when Awaiting shrinks
	sending atomic.Int64  // parts being sent
	n       atomic.Int32  // len(st.Awaiting), read without the lock
	applyMu sync.Mutex    // one part applied at a time: a part sent twice at once is applied once
}

// ViewChange is a change of view as the host acts on it
// (Host.ViewChanged).
type ViewChange struct {
	Old, New *View
	// Moves is Moves(Old, New): the slots each agent gives each other.
	Moves map[string]map[string]SlotSet
	// Holds are the moves to this agent whose release it awaits: the
	// host holds their addresses until the release (Host.ApplyHandoff).
	// An agent absent from New (dead past the grace period) sends no
	// release: its keys are taken over without one (death.go).
	Holds []PendingHold
	// Give is what this agent hands over, by new owner: nothing when New
	// declares it dead (it keeps what it holds for its return).
	Give map[string]SlotSet
	// Return is true when New brings this agent back after a death
	// (Returning); Dead when New declares it dead (DeclaredDead).
	Return, Dead bool
}

// expectReleases records what the change from old to v makes this agent
// wait for (the releases, and the moves whose addresses it holds) and the
// hand-offs it gives (moves from it), with the two views, and returns
// the change for the host.
func (n *Node) expectReleases(old, v *View) (ViewChange, error) {
	self := n.cfg.Name
	c := ViewChange{Old: old, New: v, Moves: Moves(old, v), Return: Returning(self, old, v), Dead: DeclaredDead(self, old, v)}
	for from, to := range c.Moves {
		if set, ok := to[self]; ok && from != self && !slices.Contains(v.Absent, from) {
			c.Holds = append(c.Holds, PendingHold{From: from, Epoch: v.Epoch, Slots: set, Return: c.Return})
		}
	}
	if !slices.Contains(v.Absent, self) {
		c.Give = c.Moves[self]
	}
	h := &n.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range c.Holds {
		h.st.Awaiting[p.From] = v.Epoch
		h.st.Holds = append(h.st.Holds, heldMove{From: p.From, Base: old.Epoch, Epoch: v.Epoch})
	}
	if len(c.Give) > 0 {
		h.st.Giving = append(h.st.Giving, heldMove{From: self, Base: old.Epoch, Epoch: v.Epoch})
	}
	maps.DeleteFunc(h.st.Awaiting, func(from string, _ uint64) bool { return slices.Contains(v.Absent, from) })
	h.st.Holds = slices.DeleteFunc(h.st.Holds, func(m heldMove) bool { return slices.Contains(v.Absent, m.From) })
	h.st.Views[old.Epoch], h.st.Views[v.Epoch] = old, v
	h.keepViews()
	h.n.Store(int32(len(h.st.Awaiting)))
	h.changed.Notify() // some releases may no longer be awaited
	// The parts of a released epoch are known by the pair (Released);
	// others are kept a while for a sender that resumes a hand-off.
	maps.DeleteFunc(h.st.Applied, func(id string, e uint64) bool {
		from, _, _ := strings.Cut(id, "/")
		_, released := h.st.Released[releasedKey(from, e)]
		return released || e+64 < v.Epoch
	})
	return c, h.saveLocked(n.cfg.Dir)
}

// Awaiting returns the old owners whose release this agent awaits.
func (n *Node) Awaiting() map[string]uint64 {
	n.ho.mu.Lock()
	defer n.ho.mu.Unlock()
	return maps.Clone(n.ho.st.Awaiting)
}

// WaitReleases blocks while a release is awaited: the applier calls it
// before a URL batch, and the host before a URL of its own reaches its
// sieve (the old owners' seen sets must be in it first).
func (n *Node) WaitReleases(ctx context.Context) {
	if n.ho.n.Load() == 0 {
		return
	}
	for {
		ch := n.ho.changed.Wait()
		n.ho.mu.Lock()
		waiting := len(n.ho.st.Awaiting) > 0
		n.ho.mu.Unlock()
		if !waiting {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (n *Node) handoffIdle() bool {
	n.ho.mu.Lock()
	defer n.ho.mu.Unlock()
	return len(n.ho.st.Awaiting) == 0 && n.ho.sending.Load() == 0
}

// SendHandoff delivers a part to the agent to, again until it is
// acknowledged or ctx ends.
func (n *Node) SendHandoff(ctx context.Context, to string, h *Handoff) error {
	n.ho.sending.Add(1)
	defer n.ho.sending.Add(-1)
	h.From = n.cfg.Name
	for {
		addr := n.exchangeOf(to)
		var err error
		if addr == "" {
			err = fmt.Errorf("agent %s not alive", to)
		} else {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = n.tr.SendHandoff(cctx, Peer{Name: to, Addr: addr}, h)
			cancel()
		}
		if err == nil {
			n.activity.Add(1)
			return nil
		}
		if se, ok := isStatus(err, http.StatusConflict); ok {
			return n.recutHandoff(ctx, to, h, se.View)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: hand-off to %s: %w", to, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// The body of /v1/handoff: uvarint length of a JSON header (everything
// but Seen), the header, then the seen hashes, 8 bytes each,
// little-endian.
type handoffHeader struct {
	View    uint64                   `json:"view,omitempty"`
	Counts  map[uint64]int64         `json:"counts,omitempty"`
	Release bool                     `json:"release,omitempty"`
	Waits   map[string]time.Duration `json:"waits,omitempty"`
}

func encodeHandoff(h *Handoff) []byte {
	hdr, _ := json.Marshal(handoffHeader{View: h.View, Counts: h.Counts, Release: h.Release, Waits: h.Waits})
	b := binary.AppendUvarint(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	for _, x := range h.Seen {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func decodeHandoff(b []byte) (*Handoff, error) {
	l, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < l || (uint64(len(b)-k)-l)%8 != 0 {
		return nil, errors.New("malformed hand-off")
	}
	var hdr handoffHeader
	if err := json.Unmarshal(b[k:k+int(l)], &hdr); err != nil {
		return nil, err
	}
	h := &Handoff{View: hdr.View, Counts: hdr.Counts, Release: hdr.Release, Waits: hdr.Waits}
	for p := b[k+int(l):]; len(p) > 0; p = p[8:] {
		h.Seen = append(h.Seen, binary.LittleEndian.Uint64(p))
	}
	return h, nil
}

// MaxHandoffBytes bounds one part on the wire.
const MaxHandoffBytes = 8 << 20

// ReceiveHandoff applies a part of a hand-off sent to this agent
// (Receiver): nil once the host applied it (or had already).
func (n *Node) ReceiveHandoff(h *Handoff) error {
	from, epoch := h.From, h.Epoch
	if h.cutView() > n.viewEpoch() {
		// This agent is not at that view yet: what the part releases is
		// not held yet. The sender tries again.
		return busy("not at that view yet")
	}
	id := h.ID()
	n.ho.applyMu.Lock()
	defer n.ho.applyMu.Unlock()
	n.ho.mu.Lock()
	_, done := n.ho.st.Applied[id]
	_, released := n.ho.st.Released[releasedKey(from, epoch)]
	n.ho.mu.Unlock()
	if done || released {
		// Applied already (its acknowledgement was lost, or its sender
		// resumed the hand-off after a crash): counts are not added twice.
		return nil
	}
	if err := n.fenceHandoff(h); err != nil {
		return err
	}
	if err := n.host.ApplyHandoff(h); err != nil {
		n.log.Error("cluster: hand-off", "from", from, "epoch", epoch, "err", err)
		return busy(err.Error())
	}
	n.ho.mu.Lock()
	n.ho.st.Applied[id] = epoch
	if h.Release {
		n.ho.noteReleaseLocked(from, epoch, h.Waits)
		if e, ok := n.ho.st.Awaiting[from]; ok && e <= epoch {
			delete(n.ho.st.Awaiting, from)
			n.ho.n.Store(int32(len(n.ho.st.Awaiting)))
			n.ho.changed.Notify()
		}
	}
	err := n.ho.saveLocked(n.cfg.Dir)
	n.ho.mu.Unlock()
	if err != nil {
		return asStatus(err)
	}
	n.activity.Add(1)
	if h.Release {
		n.log.Info("cluster: hand-off released", "from", from, "epoch", epoch)
	}
	return nil
}
