package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/revisit"
)

// Revisits in a crawl of several agents. A URL's revisit-schedule entry
// lives with the agent that fetches it, the owner of the address its host
// was placed at (clusterRouter.ReadyOwner). The entries of the addresses
// a hand-off gives away move once it is done (every entry at a leave); an
// entry is also moved when it is issued on an agent that does not own it
// (one left behind) or its task leaves the frontier in a hand-off
// (ForwardReady). The sender routes the entry (cluster.KindRevisit) and forgets it
// once the batches holding it are in its outbox, durable; the receiver
// adopts it (revisit.Schedule.Adopt), which takes a copy sent twice (a
// crash before the forget) once. The entries of an agent that died wait
// for its return: their due times are late, not lost (unless it is
// forgotten).

// revisitMoveBatch bounds the entries routed and not yet forgotten before
// the outbox is flushed for them.
const revisitMoveBatch = 1024

// revisitMoves are the entries routed to other agents and not yet
// forgotten by this agent's schedule.
type revisitMoves struct {
	mu   sync.Mutex
	sent []revisit.Entry
}

// issueRevisit hands a due URL's record to this agent's frontier or, in
// a cluster, its entry to the agent that owns its host's address.
func (a *Agent) issueRevisit(rec []byte) error {
	if a.router != nil {
		if to := a.router.ReadyOwner(rec); to != frontier.Self {
			return a.moveRevisit(to, rec)
		}
	}
	return a.frontier.AcceptReady(rec)
}

// forwardRevisit moves the entry of a revisit task the frontier hands to
// another agent (rec, a ready or hand-over record), instead of the task:
// the task alone would be refused there, its URL not issued. It reports
// whether rec was a revisit task.
func (a *Agent) forwardRevisit(to frontier.Peer, rec []byte) (bool, error) {
	if a.revisits == nil {
		return false, nil
	}
	_, inner, _, err := frontier.SplitHandover(rec)
	if err != nil {
		return false, nil // not a record this agent can read: forwarded as is
	}
	m, _, err := frontier.SplitRecord(inner)
	if err != nil || m.Path.Last() != frontier.HopRevisit {
		return false, nil
	}
	return true, a.moveRevisit(to, inner)
}

// moveRevisit routes the entry of the URL of rec to the agent to.
func (a *Agent) moveRevisit(to frontier.Peer, rec []byte) error {
	_, url, err := frontier.SplitRecord(rec)
	if err != nil {
		return err
	}
	e, ok, err := a.revisits.Entry(string(url))
	if err != nil || !ok {
		return err // not scheduled (forgotten already): nothing to move
	}
	return a.sendRevisits(to, []revisit.Entry{e})
}

// sendRevisits routes entries to the agent to, and forgets what was sent
// once revisitMoveBatch entries wait for it.
func (a *Agent) sendRevisits(to frontier.Peer, es []revisit.Entry) error {
	for _, e := range es {
		if err := a.router.route(to, cluster.KindRevisit, appendRevisitEntry(nil, e)); err != nil {
			return err
		}
	}
	m := &a.revisitMoves
	m.mu.Lock()
	m.sent = append(m.sent, es...)
	n := len(m.sent)
	m.mu.Unlock()
	if n >= revisitMoveBatch {
		return a.forgetMovedRevisits()
	}
	return nil
}

// forgetMovedRevisits writes the records routed so far to the outbox and
// removes the entries sent from the schedule. Before the node starts the
// entries stay (issued, they are moved again after a crash).
func (a *Agent) forgetMovedRevisits() error {
	n := a.clusterNode.Load()
	if n == nil || a.revisits == nil {
		return nil
	}
	m := &a.revisitMoves
	m.mu.Lock()
	sent := m.sent
	m.sent = nil
	m.mu.Unlock()
	if len(sent) == 0 {
		return nil
	}
	if err := n.Flush(); err != nil {
		m.mu.Lock()
		m.sent = append(m.sent, sent...)
		m.mu.Unlock()
		return err
	}
	_, err := a.revisits.Forget(sent)
	return err
}

// moveAllRevisits sends every entry of the schedule whose host's address
// another agent owns to that agent: after a hand-off, and at a leave
// (once the view without this agent is in force) every entry.
func (a *Agent) moveAllRevisits() error {
	if a.revisits == nil {
		return nil
	}
	after, moved := "", 0
	for {
		es, err := a.revisits.Entries(after, revisitMoveBatch)
		if err != nil || len(es) == 0 {
			if moved > 0 {
				a.log.Info("cluster: revisit schedule entries moved to the owners of their addresses", "entries", moved)
			}
			return errors.Join(err, a.forgetMovedRevisits())
		}
		after = es[len(es)-1].URL
		byOwner := map[frontier.Peer][]revisit.Entry{}
		for _, e := range es {
			if to := a.router.ReadyOwner(e.Rec); to != frontier.Self {
				byOwner[to] = append(byOwner[to], e)
				moved++
			}
		}
		for to, group := range byOwner {
			if err := a.sendRevisits(to, group); err != nil {
				return err
			}
		}
	}
}

// adoptRevisit puts an entry another agent sent in the schedule.
func (a *Agent) adoptRevisit(rec []byte) error {
	e, err := splitRevisitEntry(rec)
	if err != nil {
		return err
	}
	if a.revisits == nil {
		return fmt.Errorf("a revisit-schedule entry for %s, and this agent has no schedule (--revisit)", e.URL)
	}
	_, err = a.revisits.Adopt(e.URL, e.State)
	return err
}

// A KindRevisit record: the entry's frontier record, its length first
// (uvarint), then its State's encoding.
func appendRevisitEntry(dst []byte, e revisit.Entry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(e.Rec)))
	return append(append(dst, e.Rec...), e.State...)
}

// splitRevisitEntry parses a KindRevisit record.
func splitRevisitEntry(rec []byte) (revisit.Entry, error) {
	n, k := binary.Uvarint(rec)
	if k <= 0 || n > uint64(len(rec)-k) {
		return revisit.Entry{}, errors.New("a malformed revisit-schedule entry")
	}
	inner := rec[k : k+int(n)]
	_, url, err := frontier.SplitRecord(inner)
	if err != nil {
		return revisit.Entry{}, fmt.Errorf("a revisit-schedule entry: %w", err)
	}
	return revisit.Entry{URL: string(url), Rec: inner, State: rec[k+int(n):]}, nil
}

// shareRevisitBudget gives the schedule this agent's share of
// --revisit-budget in view v: its share of the keys, so that the crawl's
// agents together spend the budget once.
func (a *Agent) shareRevisitBudget(v *cluster.View) {
	if a.revisits != nil && v != nil {
		a.revisits.SetShare(v.Share(a.cfg.Cluster.Agent))
	}
}
