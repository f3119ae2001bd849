package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Joining a crawl that has a view. An agent started after the view
// formed (or one the view left out) compares its settings with every
// member as any agent does (hello), then asks the view's coordinator to
// be added (POST /v1/join); the coordinator proposes the next view with
// it (ProposeView), in which the joining agent is a target: the commit
// gives it the view and the view it replaces, and the old owners hand
// its share over. The joining agent fetches nothing before it holds the
// view and its members are all here (WaitReady), and schedules nothing
// moved to it before the old owner's release (handoff.go).

// Leaving marks this agent as leaving the crawl deliberately, before it
// proposes the view without itself: its zombie guard then does not cut
// its requests in flight when that view is in force (they end, and its
// releases wait for them). The mark is saved (awaiting.json) until
// LeaveDone: a start after a crash or a timeout in the middle of the
// leave resumes it (IsLeaving) instead of asking to join again.
func (n *Node) Leaving() error {
	n.leaving.Store(true)
	return n.setLeaving(true)
}

// IsLeaving reports whether this agent is leaving: Leaving was called in
// this process, or in an earlier one whose leave did not finish.
func (n *Node) IsLeaving() bool { return n.leaving.Load() }

// leftView reports whether this agent is leaving and its view no longer
// has it: it owns no key, and forwards to their owners the URLs it is
// given (a start that resumes the leave replays its inbox from its
// checkpoint, with its zombie guard closed until a view with it, which
// does not come).
func (n *Node) leftView() bool {
	if !n.leaving.Load() {
		return false
	}
	v := n.View()
	return v != nil && !v.Has(n.cfg.Name)
}

// LeaveDone records that the leave is finished: everything handed over.
// A later start on this directory asks to join the crawl again.
func (n *Node) LeaveDone() error { return n.setLeaving(false) }

func (n *Node) setLeaving(on bool) error {
	n.ho.mu.Lock()
	defer n.ho.mu.Unlock()
	n.ho.st.Leaving = on
	return n.ho.saveLocked(n.cfg.Dir)
}

// rejoin is helloAll's step for an agent whose view does not have it (it
// left the crawl, and was started again on its directory) and that is
// not leaving: once it holds the newest view its members announce, it
// asks the coordinator to add it.
func (n *Node) rejoin(ctx context.Context, v *View, alive []Member) {
	for _, m := range alive {
		if m.Meta.ViewEpoch > v.Epoch && n.isAgreed(m.Name) {
			return // viewCatchUp installs the newer view first
		}
	}
	n.askJoin(ctx, v)
}

// joinRequest is the body of /v1/join.
type joinRequest struct {
	Name   string `json:"name"`
	Weight uint32 `json:"weight,omitempty"`
}

// askJoin asks the coordinator of v (as this agent sees the members) to
// add this agent, at most once per ten probe intervals.
func (n *Node) askJoin(ctx context.Context, v *View) {
	if time.Since(n.lastJoinAsk) < 10*n.cfg.Timing.probe() {
		return
	}
	n.lastJoinAsk = time.Now()
	alive := map[string]string{}
	for _, m := range n.aliveMembers() {
		alive[m.Name] = m.Meta.Exchange
	}
	for _, name := range v.Names() {
		addr, ok := alive[name]
		if !ok || addr == "" {
			continue
		}
		body, _ := json.Marshal(joinRequest{Name: n.cfg.Name, Weight: n.cfg.Weight})
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := n.client.post(cctx, addr, "/v1/join", body)
		cancel()
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusGone {
			n.finish("the crawl was over when " + name + " was asked to join it")
		} else if err != nil {
			n.log.Info("cluster: join asked, not yet granted", "coordinator", name, "err", err)
		} else {
			n.log.Info("cluster: joined the crawl", "coordinator", name)
		}
		return // the coordinator is the first alive member of the view
	}
}

// serveJoin adds an agent to the view (the coordinator only; others
// answer 409 naming it). Once the crawl is over it answers 410: the
// agent asking compared its settings with this one, so it is of this
// crawl, and ends as well.
func (n *Node) serveJoin(w http.ResponseWriter, r *http.Request) {
	var j joinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxControlBytes)).Decode(&j); err != nil || !ValidName(j.Name) {
		http.Error(w, "bad join request", http.StatusBadRequest)
		return
	}
	cur := n.View()
	if cur == nil || !n.isReady() {
		http.Error(w, "no view yet", http.StatusServiceUnavailable)
		return
	}
	if c := n.Coordinator(); c != n.cfg.Name {
		http.Error(w, fmt.Sprintf("ask the coordinator, %s", c), http.StatusConflict)
		return
	}
	if !n.isAgreed(j.Name) {
		http.Error(w, "settings not compared yet (hello first)", http.StatusConflict)
		return
	}
	if cur.Has(j.Name) {
		w.WriteHeader(http.StatusOK)
		return
	}
	next, err := NextView(cur, []ViewAgent{{Name: j.Name, Weight: j.Weight}})
	if err == nil {
		err = n.ProposeView(r.Context(), next, "join of "+j.Name)
	}
	if err != nil {
		code := http.StatusServiceUnavailable
		switch {
		case errors.Is(err, ErrViewConflict):
			code = http.StatusConflict
		case errors.Is(err, ErrFinished):
			code = http.StatusGone // askJoin: the joining agent ends too
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.WriteHeader(http.StatusOK)
}
