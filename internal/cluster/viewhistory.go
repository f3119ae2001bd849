package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// The views an agent installed, by epoch: a digest of each of the last
// maxHistory (state/cluster/views.json, rewritten durably at each
// install). GET /v1/view?at=E answers the digest of this agent's view of
// epoch E, 404 when it holds none. An agent restarted on a view that the
// crawl's members have since replaced asks them, before installing
// theirs, which view of its epoch they held (viewadopt.go): two views of
// one epoch are never both agreed, so a member that held another one
// shows its own was never agreed.

// maxHistory bounds the views remembered.
const maxHistory = 64

// viewHistory is a Node's record of the views it installed.
type viewHistory struct {
	mu      sync.Mutex
	digests map[uint64]uint64 // epoch → viewDigest
}

// viewDigest is a digest of v's epoch, owners with their weights and
// absent agents (what sameView compares).
func viewDigest(v *View) uint64 {
	b, _ := json.Marshal(struct {
		Epoch  uint64      `json:"epoch"`
		Agents []ViewAgent `json:"agents"`
		Absent []string    `json:"absent,omitempty"`
	}{v.Epoch, v.Agents, v.Absent})
	return xxhash.Sum64(b)
}

func (n *Node) historyPath() string { return filepath.Join(n.cfg.Dir, "views.json") }

// loadHistory reads the saved record (none: empty).
func (n *Node) loadHistory() error {
	h := &n.vc.hist
	h.digests = map[uint64]uint64{}
	b, err := os.ReadFile(n.historyPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := json.Unmarshal(b, &h.digests); err != nil {
		return fmt.Errorf("cluster: %s: %w", n.historyPath(), err)
	}
	return nil
}

// recordView adds v to the record and saves it, the oldest epochs past
// maxHistory dropped.
func (n *Node) recordView(v *View) error {
	h := &n.vc.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.digests == nil {
		h.digests = map[uint64]uint64{}
	}
	h.digests[v.Epoch] = viewDigest(v)
	for len(h.digests) > maxHistory {
		oldest := v.Epoch
		for e := range h.digests {
			oldest = min(oldest, e)
		}
		delete(h.digests, oldest)
	}
	b, _ := json.Marshal(h.digests)
	return writeDurable(n.historyPath(), b)
}

// heldAt returns the digest of the view of epoch this agent installed.
func (n *Node) heldAt(epoch uint64) (uint64, bool) {
	h := &n.vc.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.digests[epoch]
	return d, ok
}

// viewAt is the answer to GET /v1/view?at=E.
type viewAt struct {
	Epoch  uint64 `json:"epoch"`
	Digest uint64 `json:"digest"`
}

func (n *Node) serveViewAt(w http.ResponseWriter, at string) {
	e, err := strconv.ParseUint(at, 10, 64)
	if err != nil {
		http.Error(w, "bad epoch", http.StatusBadRequest)
		return
	}
	d, ok := n.heldAt(e)
	if !ok {
		http.Error(w, "no view of that epoch remembered", http.StatusNotFound)
		return
	}
	writeJSON(w, viewAt{Epoch: e, Digest: d})
}
