package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// The durable state of hand-offs (state/cluster/awaiting.json), so that a
// hand-off survives a crash of either side:
//
//   - as a new owner: the releases awaited, the moves whose addresses are
//     held until their release (Holds, with the views their slots are
//     computed from), and, per address released, the earliest time of its
//     next request (NotBefore, the release's wait from its receipt, kept
//     until it has passed): a restart holds the same addresses and keeps
//     the same waits (Host.ResumeHolds);
//   - as an old owner: the hand-offs not finished (Giving), which the host
//     runs again at its next start (Node.PendingGiving), and, once their
//     requests in flight have ended, the earliest next request of each
//     address given up (GivingUntil, by epoch): the releases sent after a
//     restart carry the same waits;
//   - the parts applied, by id, and the (sender, epoch) pairs whose
//     release was applied (Released): a part sent again — after a timeout,
//     or by a sender that resumed its hand-off after a crash — is
//     acknowledged without being applied again, so counts are not added
//     twice.
//
// The file is rewritten (temporary, fsync, rename) at each change; it is
// small: a few entries per view change.

// awaitingState is the content of awaiting.json.
type awaitingState struct {
	Awaiting  map[string]uint64    `json:"awaiting"`
	Applied   map[string]uint64    `json:"applied"`
	Holds     []heldMove           `json:"holds,omitempty"`
	Giving    []heldMove           `json:"giving,omitempty"` // From is this agent
	Views     map[uint64]*View     `json:"views,omitempty"`  // by epoch: the views Holds and Giving refer to
	NotBefore map[string]time.Time `json:"not_before,omitempty"`
	Released  map[string]uint64    `json:"released,omitempty"` // "from/epoch" → epoch
	Leaving   bool                 `json:"leaving,omitempty"`  // a leave not finished (leave.go)

	GivingUntil map[uint64]map[string]time.Time `json:"giving_until,omitempty"` // by epoch of Giving
}

// heldMove names one move of slots: from the agent From at the change
// from view Base to view Epoch.
type heldMove struct {
	From  string `json:"from"`
	Base  uint64 `json:"base"`
	Epoch uint64 `json:"epoch"`
}

// PendingHold is a move of slots to this agent whose release is awaited:
// the host holds the addresses of Slots until the release of Epoch from
// From. Return is true when that view brought this agent back after a
// death (absent from the view it replaced, a member of it): the parts of
// Epoch are a return's hand-back.
type PendingHold struct {
	From   string
	Epoch  uint64
	Slots  SlotSet
	Return bool
}

// maxReleased bounds the released pairs kept.
const maxReleased = 4096

// keepViews drops the saved views no hold or giving refers to; h.mu held.
func (h *handoffs) keepViews() {
	used := map[uint64]bool{}
	for _, m := range slices.Concat(h.st.Holds, h.st.Giving) {
		used[m.Base], used[m.Epoch] = true, true
	}
	for e := range h.st.Views {
		if !used[e] {
			delete(h.st.Views, e)
		}
	}
}

func (h *handoffs) path(dir string) string { return filepath.Join(dir, "awaiting.json") }

// load reads the saved state (none: nothing awaited).
func (h *handoffs) load(dir string) error {
	h.st = awaitingState{}
	b, err := os.ReadFile(h.path(dir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: %w", err)
	}
	if err == nil {
		if err := json.Unmarshal(b, &h.st); err != nil {
			return fmt.Errorf("cluster: %s: %w", h.path(dir), err)
		}
	}
	h.st.Awaiting, h.st.Applied, h.st.Released = orEmpty(h.st.Awaiting), orEmpty(h.st.Applied), orEmpty(h.st.Released)
	h.st.Views, h.st.NotBefore = orEmpty(h.st.Views), orEmpty(h.st.NotBefore)
	for _, m := range slices.Concat(h.st.Holds, h.st.Giving) {
		if h.st.Views[m.Base] == nil || h.st.Views[m.Epoch] == nil {
			return fmt.Errorf("cluster: %s: the views of the move at epoch %d are missing", h.path(dir), m.Epoch)
		}
	}
	h.n.Store(int32(len(h.st.Awaiting)))
	return nil
}

// saveLocked writes the state durably; h.mu is held.
func (h *handoffs) saveLocked(dir string) error {
	now := time.Now()
	for a, t := range h.st.NotBefore {
		if !t.After(now) {
			delete(h.st.NotBefore, a)
		}
	}
	b, _ := json.Marshal(h.st)
	return writeDurable(h.path(dir), b)
}

// pendingHolds returns the saved holds with their slots.
func (n *Node) pendingHolds() ([]PendingHold, map[string]time.Time) {
	h := &n.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []PendingHold
	moves := map[[2]uint64]map[string]map[string]SlotSet{}
	for _, m := range h.st.Holds {
		k := [2]uint64{m.Base, m.Epoch}
		if moves[k] == nil {
			moves[k] = Moves(h.st.Views[m.Base], h.st.Views[m.Epoch])
		}
		set := moves[k][m.From][n.cfg.Name]
		if set != nil {
			ret := Returning(n.cfg.Name, h.st.Views[m.Base], h.st.Views[m.Epoch])
			out = append(out, PendingHold{From: m.From, Epoch: m.Epoch, Slots: set, Return: ret})
		}
	}
	return out, maps.Clone(h.st.NotBefore)
}

// PendingGiving returns the hand-offs this agent had begun as an old owner
// and not finished (a crash, or a stop, in the middle): for each, the
// change of view that made it, with its Give. Run them again and call
// GivingDone.
func (n *Node) PendingGiving() (out []ViewChange) {
	h := &n.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.st.Giving {
		old, v := h.st.Views[m.Base], h.st.Views[m.Epoch]
		out = append(out, ViewChange{Old: old, New: v, Give: Moves(old, v)[n.cfg.Name]})
	}
	return out
}

// GivingDone records that this agent's hand-off at epoch is finished:
// every part and the release acknowledged.
func (n *Node) GivingDone(epoch uint64) error {
	h := &n.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	h.st.Giving = slices.DeleteFunc(h.st.Giving, func(m heldMove) bool { return m.Epoch == epoch })
	delete(h.st.GivingUntil, epoch)
	h.keepViews()
	return h.saveLocked(n.cfg.Dir)
}

// GivingUntil merges into until (address → earliest next request) what
// was saved for this agent's hand-off at epoch, saves the result, and
// returns it: the releases of a hand-off resumed after a crash carry the
// waits its first run had computed (the requests it knew of have ended).
// Call it before the first release; GivingDone forgets it.
func (n *Node) GivingUntil(epoch uint64, until map[string]time.Time) (map[string]time.Time, error) {
	h := &n.ho
	h.mu.Lock()
	defer h.mu.Unlock()
	out := orEmpty(maps.Clone(h.st.GivingUntil[epoch]))
	for a, t := range until {
		if t.After(out[a]) {
			out[a] = t
		}
	}
	h.st.GivingUntil = orEmpty(h.st.GivingUntil)
	h.st.GivingUntil[epoch] = out
	return out, h.saveLocked(n.cfg.Dir)
}

// noteReleaseLocked records an applied release of epoch from from: the
// holds it ends, the waits it carries (from now), and the pair, so that
// its parts are not applied again; h.mu held.
func (h *handoffs) noteReleaseLocked(from string, epoch uint64, waits map[string]time.Duration) {
	h.st.Holds = slices.DeleteFunc(h.st.Holds, func(m heldMove) bool { return m.From == from && m.Epoch <= epoch })
	h.keepViews()
	now := time.Now()
	for a, d := range waits {
		if t := now.Add(d); t.After(h.st.NotBefore[a]) {
			h.st.NotBefore[a] = t
		}
	}
	h.st.Released[releasedKey(from, epoch)] = epoch
	for len(h.st.Released) > maxReleased {
		var oldest string
		for k, e := range h.st.Released {
			if oldest == "" || e < h.st.Released[oldest] {
				oldest = k
			}
		}
		delete(h.st.Released, oldest)
	}
}

func releasedKey(from string, epoch uint64) string { return from + "/" + strconv.FormatUint(epoch, 10) }
