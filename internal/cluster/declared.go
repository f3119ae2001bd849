package cluster

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// How an agent learns that the crawl declared it dead (took its keys over
// in a view that lists it absent), whichever comes first:
//
//   - it installs such a view (a commit, the gossiped epoch, or the answer
//     of a member its zombie guard asks to confirm its view);
//   - a member acknowledging one of its batches says so: the exchange
//     answers a batch from an agent its view lists absent with the header
//     absentHeader (the epoch of that view). The batch is taken all the
//     same (nothing found is lost).
//
// Either way its guard closes at once (no request starts, those in flight
// are cut) and its log says so; the guard opens only once it is confirmed
// a member of a later view that gives it keys again (zombie.go).

// absentHeader carries, in a reply of the exchange, the epoch of the
// responder's view when that view lists the caller absent.
const absentHeader = "Petrel-Absent-In-View"

// markAbsent sets absentHeader on w when this agent's view lists sender
// absent.
func (n *Node) markAbsent(w http.ResponseWriter, sender string) {
	if v := n.View(); v != nil && slices.Contains(v.Absent, sender) {
		w.Header().Set(absentHeader, strconv.FormatUint(v.Epoch, 10))
	}
}

// absentReply is called by the client with the absentHeader of a reply
// from the agent at addr.
func (n *Node) absentReply(addr string, epoch uint64) {
	if epoch <= n.viewEpoch() {
		return // this agent holds that view (or a later one) already
	}
	n.guard.Close(fmt.Sprintf("declared dead: the agent at %s answers that its view of epoch %d lists this agent absent", addr, epoch))
}

// noteDeclaredDead closes the zombie guard when v, about to be installed,
// lists this agent absent: the crawl declared it dead and took its keys
// over. It closes before v is in force and before the host acts on it, so
// no request of this agent starts under a view that gave its keys away.
func (n *Node) noteDeclaredDead(old, v *View) {
	if v.Has(n.cfg.Name) || !slices.Contains(v.Absent, n.cfg.Name) {
		return
	}
	if old != nil && !old.Has(n.cfg.Name) {
		return // absent already: nothing new learnt
	}
	n.guard.Close(fmt.Sprintf("declared dead: the crawl's view %s lists this agent absent", v))
}
