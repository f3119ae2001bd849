package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The node's part of the coordination on etcd (package coord): it runs
// the embedded etcd member when this agent is a coordinator, connects,
// is admitted (the crawl's identity), holds a lease and its agent key,
// campaigns to write views, and acts on what it reads back: views in
// revision order (installed as they come, none skipped), the
// cluster-wide settings, the stop and the end; and it opens and closes
// the guard (guard.go).

// coordState is what the node knows from etcd.
type coordState struct {
	mu       sync.Mutex
	crawl    *coord.Crawl
	lease    *coord.Lease
	state    coord.State // the newest state read
	regRev   int64       // the revision of this process's registration
	answered int64       // the end's wave last answered
	member   *coord.Member

	// Read and written by coordinate's goroutine only, without mu.
	obeyed int64 // the revision of the whole-crawl stop this directory last obeyed (stopFile)
	prior  int64 // the lease this directory last registered under (leaseFile), 0 if none
}

// stopFile holds the revision of the last whole-crawl stop this agent
// obeyed. A stop applies to an agent that registered before it, and to
// one that registered after it while no view has been written since (the
// crawl was stopped while forming, or stopped and not resumed) unless
// this directory obeyed that very stop already: started again, it
// resumes the crawl, and the first view it and the others form ends
// that stop for every agent. Its reading fails closed: a file that does
// not hold a revision stops the agent, for a stop obeyed and forgotten
// would stop it again at every start.
const stopFile = "stopped"

// leaseFile holds this agent's lease id, so that a restart on the same
// directory (the directory lock excludes its predecessor) revokes it at
// once instead of waiting for it to expire.
const leaseFile = "lease"

// coordinate connects to the coordinators and follows the crawl until
// ctx ends. A refusal (another key, other settings, the name taken) is
// fatal; a lost lease (cut off past its TTL) makes the agent register
// again, as a return.
func (n *Node) coordinate(ctx context.Context) {
	obeyed, err := readNumber(filepath.Join(n.cfg.Dir, stopFile), "a stop's revision", 0, "remove it if no whole-crawl stop is in force")
	if err != nil {
		n.fail(err)
		return
	}
	prior, err := readNumber(filepath.Join(n.cfg.Dir, leaseFile), "a lease id", 0,
		"remove it to start anyway: the previous registration then goes when its lease expires")
	if err != nil {
		n.fail(err)
		return
	}
	n.co.obeyed, n.co.prior = int64(obeyed), int64(prior)
	crawl, err := n.connect(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.fail(err)
		}
		return
	}
	n.co.mu.Lock()
	n.co.crawl = crawl
	n.co.mu.Unlock()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		err := n.followLease(ctx, crawl)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, coord.ErrRefused) {
			n.fail(fmt.Errorf("cluster: %w", err))
			return
		}
		n.guard.Close("lease lost: " + err.Error())
		n.log.Warn("cluster: lease lost; registering again", "err", err)
		retry.Reset(200 * time.Millisecond)
	}
}

// connect starts the embedded member (a coordinator), dials the
// coordinators and is admitted to the crawl.
func (n *Node) connect(ctx context.Context) (*coord.Crawl, error) {
	self, coordinator := n.selfCoordinator()
	auth, cert, err := n.cfg.Key.issue(n.cfg.Name, []netip.Addr{n.cfg.Bind.Addr(), self.Client.Addr()})
	if err != nil {
		return nil, err
	}
	if coordinator {
		if err := n.startMember(ctx, auth, cert, self); err != nil {
			return nil, err
		}
	}
	cli, err := coord.Dial(ctx, etcdEndpoints(n.cfg.Coordinators, n.cfg.Endpoints), auth.ClientTLS(cert))
	if err != nil {
		if errors.Is(err, coord.ErrWrongKey) {
			return nil, fmt.Errorf("cluster: refused: %w", err)
		}
		return nil, err
	}
	context.AfterFunc(ctx, func() { cli.Close() })
	crawl := coord.NewCrawl(cli, n.cfg.CrawlName)
	var created bool
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		created, err = crawl.Admit(actx, coord.Identity{Settings: n.cfg.Settings})
		cancel()
		if err == nil || errors.Is(err, coord.ErrRefused) || ctx.Err() != nil {
			break
		}
		n.log.Info("cluster: waiting for a quorum of the coordinators", "err", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: refused by the crawl: %w", err)
	}
	if v := n.View(); created && v != nil {
		// Views are numbered by etcd's revisions: under coordinators that
		// lost the crawl's data, the new views would be older than this one.
		return nil, fmt.Errorf("cluster: the coordinators hold no record of crawl %q, but this agent holds its view %s: their data was lost, or these are other coordinators; restore the coordinators' state/cluster/etcd (or the external etcd) from a backup", n.cfg.CrawlName, v)
	}
	return crawl, nil
}

func (n *Node) selfCoordinator() (coord.Coordinator, bool) {
	for _, c := range n.cfg.Coordinators {
		if c.Name == n.cfg.Name {
			return c, true
		}
	}
	return coord.Coordinator{}, false
}

// startMember starts this agent's etcd member in the background: it
// serves once a majority of the coordinators is up.
func (n *Node) startMember(ctx context.Context, auth *coord.Authority, cert tls.Certificate, self coord.Coordinator) error {
	ex := n.cfg.ExchangeAddr()
	if ex == self.Client.String() || ex == self.Peer().String() {
		return fmt.Errorf("cluster: --coordinators: %s's etcd ports %d and %d take its exchange's address %s: give another port", self.Name, self.Client.Port(), self.Peer().Port(), ex)
	}
	files, err := auth.WriteFiles(filepath.Join(n.cfg.Dir, "etcd-tls"), n.cfg.Name, cert)
	if err != nil {
		return err
	}
	n.wg.Go(func() {
		m, err := coord.StartMember(ctx, coord.MemberConfig{
			Self: self, Coordinators: n.cfg.Coordinators, Dir: filepath.Join(n.cfg.Dir, "etcd"), TLS: files, Logger: n.log,
			Token: n.cfg.CrawlName + "-" + n.cfg.Key.Fingerprint(),
			Log:   func(line string) { n.log.Warn("etcd: " + line) },
		})
		if err != nil {
			if ctx.Err() == nil {
				n.fail(err)
			}
			return
		}
		n.co.mu.Lock()
		n.co.member = m
		n.co.mu.Unlock()
		select {
		case <-ctx.Done():
		case err := <-m.Failed():
			n.fail(fmt.Errorf("cluster: etcd member: %w", err))
		}
		m.Close()
	})
	return nil
}

// followLease holds one lease: registers under it, campaigns, and acts on
// the crawl's states until the lease is lost or ctx ends.
func (n *Node) followLease(ctx context.Context, crawl *coord.Crawl) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lease, err := coord.GrantLease(lctx, crawl.Client(), n.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	prior := n.co.prior
	if err := writeDurable(filepath.Join(n.cfg.Dir, leaseFile), []byte(strconv.FormatInt(int64(lease.ID), 10)+"\n")); err != nil {
		return err
	}
	n.co.prior = int64(lease.ID)
	var regRev int64
	var registered coord.AgentRecord
	for {
		registered = n.record(coord.Figures{})
		regRev, err = crawl.Register(lctx, lease, clientv3.LeaseID(prior), registered)
		if !errors.Is(err, coord.ErrRefused) {
			break
		}
		// The name is held by a predecessor's lease not yet expired (a
		// restart on another directory): wait for its key to go.
		n.log.Info("cluster: waiting for the previous lease of this agent's name to expire", "err", err)
		if err := crawl.AwaitFree(lctx, n.cfg.Name, regRev); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	n.co.mu.Lock()
	n.co.lease, n.co.regRev = lease, regRev
	n.co.mu.Unlock()
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { n.fenceLoop(lctx, lease) })
	wg.Go(func() {
		policy := coord.Policy{Wait: n.cfg.Wait, DeathDelay: n.cfg.Grace, Settle: n.cfg.Settle}
		crawl.Lead(lctx, lease, n.cfg.Name, policy, func(msg string, args ...any) { n.log.Warn("cluster: "+msg, args...) })
	})
	wg.Go(func() { n.publishLoop(lctx, crawl, lease, registered) })
	states := crawl.FollowFrom(lctx, regRev)
	for {
		select {
		case <-lctx.Done():
			return lctx.Err()
		case <-lease.Lost():
			return lease.Err()
		case st, ok := <-states:
			if !ok {
				return lctx.Err()
			}
			n.onState(lctx, lease, st)
		}
	}
}

// stopApplies reports whether the whole-crawl stop in st, if any, stops
// an agent registered at regRev whose directory last obeyed the stop of
// revision obeyed (stopFile).
func stopApplies(st coord.State, regRev, obeyed int64) bool {
	return st.Stopped && st.StopRev != obeyed && (st.StopRev > regRev || st.View.Rev < st.StopRev)
}

// obeyStop stops this agent for the whole-crawl stop in st, and records
// that this directory obeyed it (stopFile).
func (n *Node) obeyStop(st coord.State) {
	n.co.obeyed = st.StopRev
	if err := writeDurable(filepath.Join(n.cfg.Dir, stopFile), []byte(strconv.FormatInt(st.StopRev, 10)+"\n")); err != nil {
		n.log.Error("cluster: record the whole-crawl stop", "err", err)
	}
	n.requestStop("whole-crawl stop: " + st.Stop)
}

// record is this agent's record with figures f.
func (n *Node) record(f coord.Figures) coord.AgentRecord {
	return coord.AgentRecord{Name: n.cfg.Name, Exchange: n.cfg.ExchangeAddr(), Weight: n.cfg.Weight, Leaving: n.IsLeaving(), Done: n.leaveDone.Load(), Figures: f}
}

// figures are this agent's published figures, answering wave.
func (n *Node) figures(wave int64) coord.Figures {
	s := n.Status()
	return coord.Figures{Idle: s.Idle, Sent: s.SentBatches, Applied: s.AppliedBatches, Activity: s.Activity,
		Fetched: s.Fetched, Queued: s.Queued, Outbox: s.OutboxURLs, Inbox: s.InboxUnapplied,
		OutboxBatches: s.OutboxBatches, OutboxBytes: s.OutboxBytes, Time: s.Time,
		Epoch: int64(s.ViewEpoch), Wave: wave}
}

// publishEvery is how often an agent publishes its figures unasked.
const publishEvery = 2 * time.Second

// publishLoop publishes this agent's figures every publishEvery and at
// every nudge (a wave to answer, a leave), and its record when it changed
// since registered (the one Register wrote): every agent watches records,
// only the writer of views figures.
func (n *Node) publishLoop(ctx context.Context, crawl *coord.Crawl, lease *coord.Lease, registered coord.AgentRecord) {
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	published := registered
	for count := 0; ; count++ {
		n.co.mu.Lock()
		wave := n.co.answered
		n.co.mu.Unlock()
		rec := n.record(n.figures(wave))
		pctx, cancel := context.WithTimeout(ctx, n.cfg.LeaseTTL)
		if plain := n.record(coord.Figures{}); plain != published && crawl.Publish(pctx, lease, plain) == nil {
			published = plain
		}
		crawl.PublishFigures(pctx, lease, rec.Name, rec.Figures)
		cancel()
		n.keepLast(ctx, crawl, count, rec)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.nudge:
		}
	}
}

// nudgePublish asks publishLoop to publish now.
func (n *Node) nudgePublish() {
	select {
	case n.nudge <- struct{}{}:
	default:
	}
}

// onState acts on one state of the crawl, in revision order.
func (n *Node) onState(ctx context.Context, lease *coord.Lease, st coord.State) {
	n.co.mu.Lock()
	n.co.state = st
	regRev := n.co.regRev
	newWave := st.Probe != n.co.answered
	n.co.answered = st.Probe
	n.co.mu.Unlock()
	if stopApplies(st, regRev, n.co.obeyed) {
		n.obeyStop(st)
	}
	if err := n.applySettings(ctx, st.Settings); err != nil {
		n.log.Error("cluster: cluster-wide settings", "err", err)
	}
	if st.View.Rev > 0 {
		v := ViewOf(st.View)
		if err := n.installView(v); err != nil {
			n.log.Error("cluster: install view", "err", err)
		}
	}
	if newWave {
		n.nudgePublish()
	}
	v := n.View()
	if v == nil || st.Rev < regRev {
		return
	}
	in := v.Has(n.cfg.Name)
	if st.Ended {
		n.finish("the crawl's end, written by its view's writer")
	}
	if in || n.IsLeaving() {
		n.markReady(v)
	}
	n.openGuardIfHeld(lease)
}

// fenceLoop closes the guard each time the lease's fence passes without
// renewal, and opens it again once a keep-alive makes the lease certainly
// live (a renewed lease never expired in etcd, so no view gave this
// agent's keys away for its death), until ctx ends or the lease is lost.
func (n *Node) fenceLoop(ctx context.Context, lease *coord.Lease) {
	for {
		fenced, stop := lease.Context(ctx)
		<-fenced.Done()
		stop()
		if ctx.Err() != nil || !errors.Is(context.Cause(fenced), coord.ErrFenced) {
			return
		}
		n.guard.Close(fenceClosed)
		if lease.WaitLive(ctx) != nil {
			return
		}
		n.openGuardIfHeld(lease)
	}
}

// openGuardIfHeld opens the guard if the lease is certainly live and the
// view in force, read at or after this agent's registration, has it. A
// view that declares this agent dead closed the guard as it was
// installed (viewinstall.go); it stays closed until a view has it.
func (n *Node) openGuardIfHeld(lease *coord.Lease) {
	n.co.mu.Lock()
	st, regRev := n.co.state, n.co.regRev
	n.co.mu.Unlock()
	v := n.View()
	if v == nil || st.Rev < regRev || !v.Has(n.cfg.Name) || !lease.Live(time.Now()) || !n.guard.isClosed() {
		return
	}
	n.guard.open()
	n.log.Info("cluster: zombie guard open: lease live, view read back with this agent", "view", v.String())
}

// markReady closes ready once.
func (n *Node) markReady(v *View) {
	if !closed(n.ready) {
		n.log.Info("cluster: ready", "view", v.String())
		close(n.ready)
	}
}

// ViewOf is the node's View of a view read from etcd (nil if it is not
// one): its epoch is the revision of its write; its absentees sorted, once each.
func ViewOf(cv coord.View) *View {
	as := make([]ViewAgent, len(cv.Members))
	for i, m := range cv.Members {
		as[i] = ViewAgent{Name: m.Name, Weight: m.Weight, Exchange: m.Exchange}
	}
	v, err := NewView(uint64(cv.Rev), as)
	if err != nil {
		return nil
	}
	v.Absent = slices.Compact(slices.Sorted(slices.Values(cv.Absent)))
	return v
}

// crawlState returns the newest state read from etcd, and the crawl (nil
// before the node connected).
func (n *Node) crawlState() (coord.State, *coord.Crawl) {
	n.co.mu.Lock()
	defer n.co.mu.Unlock()
	return n.co.state, n.co.crawl
}

// exchangeOf returns the exchange address of agent name while its lease
// is live ("" otherwise: nothing is sent to an agent not alive).
func (n *Node) exchangeOf(name string) string {
	st, _ := n.crawlState()
	return st.Agents[name].Exchange
}

// revokeWait bounds a clean stop's revocation of its lease.
const revokeWait = 2 * time.Second

// currentLease returns the lease this agent holds now (nil before its
// first registration).
func (n *Node) currentLease() *coord.Lease {
	n.co.mu.Lock()
	defer n.co.mu.Unlock()
	return n.co.lease
}

// leaseLive reports whether this agent's lease is certainly live at t.
func (n *Node) leaseLive(t time.Time) bool {
	l := n.currentLease()
	return l != nil && l.Live(t)
}

// revokeLease ends this agent's lease at a clean stop: its key goes at
// once, which the crawl reads as this agent not alive (its keys stay
// with it in the view until it returns, as after a death, unless it has
// left the view). It is best effort, within revokeWait: unrevoked, the
// lease expires after its TTL anyway.
func (n *Node) revokeLease() {
	l := n.currentLease()
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), revokeWait)
	defer cancel()
	l.Revoke(ctx)
}

// Alive reports whether agent name's lease is live, as last read.
func (n *Node) Alive(name string) bool {
	st, _ := n.crawlState()
	_, ok := st.Agents[name]
	return ok
}
