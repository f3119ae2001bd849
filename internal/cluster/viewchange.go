package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// View changes. A view is replaced only as a whole, by one of the next
// epoch, made deliberately: on a join or a leave (this package), or on a
// confirmed death (the caller decides; the same API). The protocol, over
// the exchange, is a two-phase agreement run by one proposer — by
// convention the coordinator, the alive member of the current view with
// the smallest name (Node.Coordinator):
//
//  1. prepare: the proposer sends the proposed view to every target (every
//     alive member of the current view and every member of the proposed
//     one, itself included). A target promises it if the view's epoch is
//     above its own and it promised no other view of that epoch in the
//     last promiseTTL; otherwise it answers 409 and the proposal is
//     abandoned (ErrViewConflict; nothing changed anywhere; the targets
//     that promised are told to forget it: /v1/view/abort).
//  2. commit: once every target promised, the proposer sends the view to
//     every target again; a target installs it (saved in
//     state/cluster/view.json, fsynced, then its epoch gossiped) and
//     answers 200, and the proposer installs it once one target answered
//     (commitAll): a view of several agents is never held by its proposer
//     alone. A target the commit does not reach learns the view later from
//     the gossiped epoch (it fetches GET /v1/view from a member announcing
//     a newer epoch, viewCatchUp).
//
// Two agents may still hold different views of one epoch: a target that
// installed a view and died before anyone learnt it from it, while the
// others — its promise lapsed — agreed another view of that epoch without
// it. Such a view is not agreed: the zombie guard compares the views, not
// only their epochs, and an agent holding one adopts the crawl's
// (viewadopt.go).
//
// Installing a view calls the host's ViewChanged (if the host implements
// ViewChangeHost) with the old and the new view, before the view is in
// force here and before the target answers the commit: the new owner
// holds what moves to it before anything can reach it under the new view.
// Views are installed in increasing epoch order on every agent; an agent
// may skip epochs (ViewChanged then gets the views it had and has).

// ViewChangeHost is implemented by a Host that acts on view changes (the
// hand-off of moved keys).
type ViewChangeHost interface {
	// ViewChanged is called once per view installed after the first, in
	// increasing epoch order (or, once, with a view of the same epoch that
	// the crawl agreed in place of this agent's: viewadopt.go), never
	// concurrently, with the view this
	// agent held (for a joining agent: the view it joins) and the new
	// one, just before the new one is in force (View still returns the
	// old one). It must not block for long: start the
	// hand-off and return (Moves(old, new) says which slots move).
	ViewChanged(old, new *View)
}

// ErrViewConflict is returned by ProposeView when a target refused the
// proposal: it holds, or promised, another view of that epoch or a newer
// one. Nothing was installed; fetch the newer view and propose again.
var ErrViewConflict = errors.New("cluster: view proposal refused: another view of that epoch or newer exists")

// promiseTTL is how long a target keeps its promise for an epoch: a
// proposer that failed between the phases does not block the next one
// for longer. A proposer commits only if every target promised within
// promiseTTL of its own promise (ProposeView), so the promises of a view
// committed are all in force when it is installed first.
const promiseTTL = 10 * time.Second

// promiseHold bounds how long a promise neither installed nor aborted is
// reported to a closed zombie guard (promisedEpoch, zombie.go): past
// promiseTTL the view may have been installed by its proposer and still
// be on its way here (a commit lost, then learnt by gossip), so a guard
// confirming the older view must not take the promise's lapse for a
// refusal. A proposer that failed between the phases keeps the guards of
// returning agents closed for that long at most.
const promiseHold = time.Minute

// viewChange is a Node's part of view changes.
type viewChange struct {
	mu        sync.Mutex // serialises installs (and the hook calls)
	proposeMu sync.Mutex // one proposal at a time from this agent

	promiseMu sync.Mutex
	promised  *View // the view promised for its epoch
	promisedT time.Time

	// beforeCommit, when set (tests), runs once every target promised and
	// before any commit is sent; an error ends the proposal there, as a
	// proposer killed at that point would.
	beforeCommit func() error

	conflict atomic.Pointer[string] // the last conflict of views logged (viewadopt.go)
	restored atomic.Pointer[View]   // the view this agent started on, until its guard opens under it (vieworphan.go)
	hist     viewHistory            // the views installed (viewhistory.go)
}

// proposal is the body of /v1/view/prepare and /v1/view/commit.
type proposal struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	View   *View  `json:"view"`
	Base   *View  `json:"base,omitempty"` // the view it replaces
}

// NextView returns the agents of the view that follows v with the agents
// add joined (a name already in v takes the new weight) and the agents
// named in remove gone. Its epoch is v's plus one. The agents absent
// from v (death.go) stay absent unless added.
func NextView(v *View, add []ViewAgent, remove ...string) (*View, error) {
	var as []ViewAgent
	for _, a := range v.Agents {
		if !slices.Contains(remove, a.Name) && !slices.ContainsFunc(add, func(b ViewAgent) bool { return b.Name == a.Name }) {
			as = append(as, a)
		}
	}
	for _, a := range add {
		if !slices.Contains(remove, a.Name) {
			as = append(as, a)
		}
	}
	if len(as) == 0 {
		return nil, errors.New("cluster: a view needs at least one agent")
	}
	nv, err := NewView(v.Epoch+1, as)
	if err == nil {
		nv.Absent = absentAfter(v.Absent, add) // death.go
	}
	return nv, err
}

// Coordinator returns the alive member of the current view with the
// smallest name (this agent counts as alive): the one that proposes the
// view changes for joins and leaves and detects the end of the crawl. ""
// before the view is known or when no member of it is alive.
func (n *Node) Coordinator() string {
	v := n.View()
	if v == nil {
		return ""
	}
	alive := map[string]bool{n.cfg.Name: true}
	for _, m := range n.aliveMembers() {
		alive[m.Name] = true
	}
	for _, name := range v.Names() {
		if alive[name] {
			return name
		}
	}
	return ""
}

// ProposeView makes next (whose epoch must be above the current view's)
// the crawl's view, by the two-phase agreement above, and returns once
// this agent has installed it and every target was sent the commit
// (targets the commit did not reach before ctx ended catch up through
// gossip; their names are in the error, the view stands). The targets are
// the alive members of the current view and every member of next; a
// member of next that is not alive makes the proposal fail before
// anything is sent. A member of the current view that is suspect or dead
// is not asked: a view without a dead member is proposed the same way.
// ErrViewConflict: a target holds or promised another view of that epoch.
func (n *Node) ProposeView(ctx context.Context, next *View, reason string) error {
	n.vc.proposeMu.Lock()
	defer n.vc.proposeMu.Unlock()
	select {
	case <-n.finished:
		return ErrFinished // decideEnd, termination.go
	default:
	}
	cur := n.View()
	if cur == nil {
		return errors.New("cluster: no view yet to change")
	}
	if next.Epoch <= cur.Epoch {
		return fmt.Errorf("cluster: proposed view has epoch %d, not above the current %d", next.Epoch, cur.Epoch)
	}
	targets, err := n.viewTargets(cur, next)
	if err != nil {
		return err
	}
	p := proposal{By: n.cfg.Name, Reason: reason, View: next, Base: cur}
	body, _ := json.Marshal(p)
	promisedAt := time.Now() // no target promised earlier
	if !n.promise(next) {
		return ErrViewConflict
	}
	promised := []string{}
	for name, addr := range targets {
		if _, err := n.client.post(ctx, addr, "/v1/view/prepare", body); err != nil {
			n.abandon(next, promised, targets, body)
			var se *StatusError
			if errors.As(err, &se) && se.Code == http.StatusConflict {
				return fmt.Errorf("%w (agent %s)", ErrViewConflict, name)
			}
			return fmt.Errorf("cluster: view proposal: prepare at %s: %w", name, err)
		}
		promised = append(promised, name)
	}
	if took := time.Since(promisedAt); took >= promiseTTL {
		// The first promises may have lapsed: another view of this epoch
		// could be promised there now.
		n.abandon(next, promised, targets, body)
		return fmt.Errorf("cluster: view proposal: the promises took %s, longer than one lasts (%s)", took.Round(time.Millisecond), promiseTTL)
	}
	n.log.Info("cluster: view change", "view", next.String(), "reason", reason)
	if n.vc.beforeCommit != nil {
		if err := n.vc.beforeCommit(); err != nil {
			return err
		}
	}
	return n.commitAll(ctx, next, cur, targets, body)
}

// commitAll sends the commit of next to every target at once and installs
// next here as soon as one target has installed it (at once when there is
// none): the proposer never holds a view that no other agent holds, so a
// proposer that dies between the phases keeps the view it replaces, and
// learns the crawl's view of that epoch as any agent that missed a commit
// does. If no target installed next before ctx ended, nothing is installed
// here (a target whose answer was lost spreads it by gossip) and the error
// says so.
func (n *Node) commitAll(ctx context.Context, next, cur *View, targets map[string]string, body []byte) error {
	type answer struct {
		name string
		err  error
	}
	answers := make(chan answer, len(targets))
	for name, addr := range targets {
		go func() { answers <- answer{name, n.commitAt(ctx, addr, body)} }()
	}
	installed := len(targets) == 0
	if installed {
		if err := n.installView(next, cur); err != nil {
			return err
		}
	}
	var missed []string
	var failed error
	for range targets {
		a := <-answers
		if a.err != nil {
			missed = append(missed, a.name)
			continue
		}
		if !installed && failed == nil {
			installed = true
			failed = n.installView(next, cur)
		}
	}
	slices.Sort(missed)
	switch {
	case failed != nil:
		return failed
	case !installed:
		return fmt.Errorf("cluster: view %d committed at no agent (%s); not installed here", next.Epoch, strings.Join(missed, ", "))
	case len(missed) > 0:
		return fmt.Errorf("cluster: view %d installed; not yet at %s (they catch up by gossip)", next.Epoch, strings.Join(missed, ", "))
	}
	return nil
}

// abandon releases the promises made to a proposal that will not be
// committed (best effort: an unreleased promise lapses after promiseTTL).
func (n *Node) abandon(v *View, promised []string, targets map[string]string, body []byte) {
	n.unpromise(v)
	n.postAll(promised, targets, "/v1/view/abort", body)
}

// unpromise drops this agent's promise of v, if it is the one held.
func (n *Node) unpromise(v *View) {
	n.vc.promiseMu.Lock()
	defer n.vc.promiseMu.Unlock()
	if p := n.vc.promised; p != nil && p.Epoch == v.Epoch && sameAgents(p, v) {
		n.vc.promised = nil
	}
}

// viewTargets maps the agents that must agree on next to their exchange
// addresses (this agent excluded).
func (n *Node) viewTargets(cur, next *View) (map[string]string, error) {
	out, missing := n.exchangesOf(next.Names())
	if missing != "" {
		return nil, fmt.Errorf("cluster: view proposal: agent %s of the new view is not alive", missing)
	}
	old, _ := n.exchangesOf(cur.Names())
	maps.Copy(out, old)
	return out, nil
}

// commitAt sends the commit to addr, again until it is answered or ctx
// ends.
func (n *Node) commitAt(ctx context.Context, addr string, body []byte) error {
	return n.postUntil(ctx, addr, "/v1/view/commit", body)
}

// promise records that this agent will install no other view of v's
// epoch for promiseTTL; false if it holds or promised another view of that
// epoch or a newer one.
func (n *Node) promise(v *View) bool {
	if cur := n.View(); cur != nil && cur.Epoch >= v.Epoch {
		return cur.Epoch == v.Epoch && sameAgents(cur, v)
	}
	n.vc.promiseMu.Lock()
	defer n.vc.promiseMu.Unlock()
	if p := n.vc.promised; p != nil && time.Since(n.vc.promisedT) < promiseTTL &&
		p.Epoch >= v.Epoch && !(p.Epoch == v.Epoch && sameAgents(p, v)) {
		return false
	}
	n.vc.promised, n.vc.promisedT = v, time.Now()
	return true
}

func sameAgents(a, b *View) bool { return slices.Equal(a.Agents, b.Agents) }

// installView makes v this agent's view if it is newer than the one held:
// the releases it makes this agent await saved, the view saved, the
// host's ViewChanged run, then the view in force and its epoch gossiped.
// base is the view v replaces, for an agent that held none (a joining
// one). An older or equal epoch is ignored.
func (n *Node) installView(v, base *View) error {
	orphan := n.neverAgreed(n.View(), v) // vieworphan.go: asks the members, before the lock
	n.vc.mu.Lock()
	defer n.vc.mu.Unlock()
	old := n.View()
	if old != nil && old.Epoch >= v.Epoch {
		return nil
	}
	if old != nil && old == orphan {
		if err := n.dropEpoch(old.Epoch); err != nil {
			return fmt.Errorf("cluster: drop the hand-offs of a view never agreed: %w", err)
		}
		if base != nil {
			old = base
		}
	}
	if old != nil && base != nil && base.Epoch == old.Epoch && !sameView(base, old) {
		// The view this agent holds was never agreed: the proposal's base
		// is the crawl's view of that epoch (viewadopt.go).
		n.log.Warn("cluster: this agent's view was never agreed (the proposal of the next one replaces another of its epoch)",
			"own", old.String(), "agreed", base.String())
		if err := n.dropEpoch(old.Epoch); err != nil {
			return fmt.Errorf("cluster: drop the hand-offs of a view never agreed: %w", err)
		}
		old = base
	}
	if old == nil || base != nil && base.Epoch > old.Epoch && !old.Has(n.cfg.Name) {
		old = base // a joining agent (or one that left and joins again): the view it joins
	}
	return n.putView(old, v)
}

// putView makes v this agent's view in place of old (nil: none), with
// vc.mu held: the releases it makes this agent await saved, the view
// saved, the host's ViewChanged run, then the view in force and its epoch
// gossiped.
func (n *Node) putView(old, v *View) error {
	var moves map[string]map[string]SlotSet
	if old != nil {
		moves = Moves(old, v)
		if err := n.expectReleases(old, v, moves); err != nil {
			return fmt.Errorf("cluster: save awaited releases: %w", err)
		}
	}
	if err := saveView(filepath.Join(n.cfg.Dir, "view.json"), v); err != nil {
		return fmt.Errorf("cluster: save view: %w", err)
	}
	if err := n.recordView(v); err != nil { // viewhistory.go
		return fmt.Errorf("cluster: save view: %w", err)
	}
	n.noteDeclaredDead(old, v) // death.go
	if h, ok := n.host.(ViewChangeHost); ok && old != nil {
		h.ViewChanged(old, v)
	}
	n.setView(v)
	n.members.setMeta(func(m *Meta) { m.ViewEpoch = v.Epoch })
	return nil
}

func (n *Node) serveViewPrepare(w http.ResponseWriter, r *http.Request) {
	p, ok := readProposal(w, r)
	if !ok {
		return
	}
	if !n.promise(p.View) {
		http.Error(w, fmt.Sprintf("view %d refused: this agent holds or promised another", p.View.Epoch), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (n *Node) serveViewAbort(w http.ResponseWriter, r *http.Request) {
	if p, ok := readProposal(w, r); ok {
		n.unpromise(p.View)
		w.WriteHeader(http.StatusOK)
	}
}

func (n *Node) serveViewCommit(w http.ResponseWriter, r *http.Request) {
	p, ok := readProposal(w, r)
	if !ok {
		return
	}
	if cur := n.View(); cur == nil || cur.Epoch < p.View.Epoch {
		n.log.Info("cluster: view change", "view", p.View.String(), "by", p.By, "reason", p.Reason)
	}
	if err := n.installView(p.View, p.Base); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func readProposal(w http.ResponseWriter, r *http.Request) (proposal, bool) {
	var p proposal
	return p, readControl(w, r, &p, "view proposal", func() error {
		if p.View == nil {
			return errors.New("no view")
		}
		return nil
	})
}

// viewCatchUp installs a newer view announced by gossip: an agent that
// missed a commit (unreachable then) fetches the view of the member
// announcing the highest epoch above its own. Agents without a view yet
// are left to helloAll (the first view, or a join). It is one round of
// everyProbe.
func (n *Node) viewCatchUp(ctx context.Context) {
	cur := n.View()
	if cur == nil {
		return
	}
	var best Member
	for _, m := range n.aliveMembers() {
		if m.Meta.ViewEpoch > cur.Epoch && m.Meta.ViewEpoch > best.Meta.ViewEpoch && n.isAgreed(m.Name) {
			best = m
		}
	}
	if best.Name == "" {
		return
	}
	v, err := n.fetchView(ctx, best.Meta.Exchange)
	if err != nil || v.Epoch <= cur.Epoch {
		return
	}
	n.log.Info("cluster: view learnt from a member", "view", v.String(), "from", best.Name)
	if err := n.installView(v, nil); err != nil {
		n.log.Error("cluster: install view", "err", err)
	}
}
