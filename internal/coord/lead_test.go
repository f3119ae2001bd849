package coord

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// testAgent is an agent reduced to its coordination: a lease, a record,
// a writer campaign, and answers to the end's waves with figures given
// by the test.
type testAgent struct {
	name   string
	crawl  *Crawl
	lease  *Lease
	cancel context.CancelFunc
	mu     sync.Mutex
	fig    Figures
	leave  bool
	wave   int64 // the last wave seen, carried by every publication
}

func startAgent(t *testing.T, c *Crawl, name string, p Policy, ttl time.Duration) *testAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l, err := GrantLease(ctx, c.cli, ttl)
	if err != nil {
		t.Fatal(err)
	}
	a := &testAgent{name: name, crawl: c, lease: l, cancel: cancel}
	if _, err := c.Register(ctx, l, 0, AgentRecord{Name: name, Exchange: name + ":1"}); err != nil {
		t.Fatal(err)
	}
	go c.Lead(ctx, l, name, p, func(string, ...any) {})
	go func() {
		answered := int64(-1)
		for st := range c.Follow(ctx) {
			if st.Probe != answered {
				answered = st.Probe
				a.set(func(a *testAgent) { a.wave = st.Probe })
				a.publish(ctx)
			}
		}
	}()
	return a
}

func (a *testAgent) publish(ctx context.Context) {
	a.mu.Lock()
	rec := AgentRecord{Name: a.name, Exchange: a.name + ":1", Leaving: a.leave}
	f := a.fig
	f.Wave = a.wave
	a.mu.Unlock()
	a.crawl.Publish(ctx, a.lease, rec)
	a.crawl.PublishFigures(ctx, a.lease, a.name, f)
}

func (a *testAgent) set(f func(*testAgent)) {
	a.mu.Lock()
	f(a)
	a.mu.Unlock()
}

// waitState follows c until ok holds, failing after d.
func waitState(t *testing.T, c *Crawl, d time.Duration, what string, ok func(State) bool) State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last State
	for st := range c.Follow(ctx) {
		last = st
		if ok(st) {
			return st
		}
	}
	t.Fatalf("%s: not within %s; last state: view %+v rev %d, agents %d, ended %v", what, d, last.View.ViewRecord, last.View.Rev, len(last.Agents), last.Ended)
	return last
}

func names(v View) []string {
	var ns []string
	for _, m := range v.Members {
		ns = append(ns, m.Name)
	}
	return ns
}

func TestViewsLeaveDeathForgetAndEnd(t *testing.T) {
	a := testAuthority(t, 3)
	_, cs := startMembers(t, a, 1)
	lifecycle(t, NewCrawl(dial(t, a, cs), "t"))
}

// lifecycle runs a crawl's coordination through its changes: a first view
// of three, a join, a leave, a death, a forget and the end.
func lifecycle(t *testing.T, c *Crawl) {
	p := Policy{Wait: 3, DeathDelay: 500 * time.Millisecond, Settle: 100 * time.Millisecond}
	start := time.Now()
	var as []*testAgent
	for _, n := range []string{"a1", "a2", "a3"} {
		as = append(as, startAgent(t, c, n, p, 2*time.Second))
	}
	st := waitState(t, c, 5*time.Second, "first view", func(s State) bool { return s.View.Rev > 0 })
	if got := names(st.View); !slices.Equal(got, []string{"a1", "a2", "a3"}) {
		t.Fatalf("first view %v", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("first view of three agents took %s, want ≤ 2 s", d)
	}
	first := st.View.Rev

	// A join: a fourth agent gets a view of four.
	as = append(as, startAgent(t, c, "a4", p, 2*time.Second))
	st = waitState(t, c, 5*time.Second, "join", func(s State) bool { return len(s.View.Members) == 4 })
	if st.View.Rev <= first {
		t.Fatalf("join's view at revision %d, not after %d", st.View.Rev, first)
	}

	// A leave: a4 asks, the view drops it at once, without absentees.
	as[3].set(func(x *testAgent) { x.leave = true })
	as[3].publish(context.Background())
	st = waitState(t, c, 5*time.Second, "leave", func(s State) bool { return len(s.View.Members) == 3 })
	if len(st.View.Absent) != 0 {
		t.Fatalf("a leave made absentees %v", st.View.Absent)
	}
	as[3].lease.Revoke(context.Background())
	as[3].cancel()

	// A death: a3's lease expires; its keys stay with it until its lease
	// is gone in etcd plus DeathDelay, then it is absent.
	as[2].cancel()
	died := time.Now()
	st = waitState(t, c, 10*time.Second, "death", func(s State) bool { return !s.View.Has("a3") })
	if d := time.Since(died); d < p.DeathDelay {
		t.Fatalf("a3's keys moved %s after its death, before DeathDelay", d)
	}
	if !slices.Equal(st.View.Absent, []string{"a3"}) {
		t.Fatalf("absent %v, want [a3]", st.View.Absent)
	}

	// No end while an agent is absent, even if all are idle.
	for _, x := range as[:2] {
		x.set(func(x *testAgent) { x.fig.Idle = true })
		x.publish(context.Background())
	}
	time.Sleep(500 * time.Millisecond)
	if s, _ := c.Read(context.Background()); s.View.Rev == 0 {
		t.Fatal("view gone")
	}
	if resp, _ := c.cli.Get(context.Background(), c.key("end")); len(resp.Kvs) != 0 {
		t.Fatal("the end was written while a3 is absent")
	}
	if _, err := c.Forget(context.Background(), "a3"); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, 5*time.Second, "end after forget", func(s State) bool { return s.Ended })
}

func TestNoEndWhileBatchInFlight(t *testing.T) {
	a := testAuthority(t, 4)
	_, cs := startMembers(t, a, 1)
	c := NewCrawl(dial(t, a, cs), "t")
	p := Policy{Wait: 2, DeathDelay: time.Second, Settle: 50 * time.Millisecond}
	x, y := startAgent(t, c, "x", p, 2*time.Second), startAgent(t, c, "y", p, 2*time.Second)
	waitState(t, c, 5*time.Second, "view", func(s State) bool { return s.View.Rev > 0 })
	// x is idle; y has a batch in its inbox, not applied: not idle.
	x.set(func(a *testAgent) { a.fig = Figures{Idle: true, Sent: 1} })
	y.set(func(a *testAgent) { a.fig = Figures{Inbox: 100} })
	x.publish(context.Background())
	y.publish(context.Background())
	time.Sleep(time.Second)
	if resp, _ := c.cli.Get(context.Background(), c.key("end")); len(resp.Kvs) != 0 {
		t.Fatal("end written with a batch in an inbox")
	}
	y.set(func(a *testAgent) { a.fig = Figures{Idle: true, Applied: 1, Activity: 1} })
	y.publish(context.Background())
	waitState(t, c, 5*time.Second, "end", func(s State) bool { return s.Ended })
}

// TestRegisterWaitsForPredecessor: a second registration of a live name
// is refused with the revision it was found at, and AwaitFree returns as
// soon as the holder's lease is revoked, not before.
func TestRegisterWaitsForPredecessor(t *testing.T) {
	c, ctx := oneMemberCrawl(t, 4)
	first := grant(t, ctx, c)
	if _, err := c.Register(ctx, first, 0, AgentRecord{Name: "a1"}); err != nil {
		t.Fatal(err)
	}
	second := grant(t, ctx, c)
	rev, err := c.Register(ctx, second, 0, AgentRecord{Name: "a1"})
	if !errorsIs(err, ErrRefused) || rev == 0 {
		t.Fatalf("second registration: rev %d, err %v; want a refusal with its revision", rev, err)
	}
	freed := make(chan error, 1)
	go func() { freed <- c.AwaitFree(ctx, "a1", rev) }()
	select {
	case err := <-freed:
		t.Fatalf("AwaitFree returned %v while the name is held", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := first.Revoke(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-freed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AwaitFree did not return after the holder's lease was revoked")
	}
	if _, err := c.Register(ctx, second, 0, AgentRecord{Name: "a1"}); err != nil {
		t.Fatalf("registration after the holder left: %v", err)
	}
}

// TestAgentWatchLeavesOutFigures: an agent's watch (FollowFrom) gets no
// state for another agent's figures, only for the keys it acts on; the
// whole-prefix Follow (the writer's) has the figures.
func TestAgentWatchLeavesOutFigures(t *testing.T) {
	c, ctx := oneMemberCrawl(t, 5)
	l := grant(t, ctx, c)
	rev, err := c.Register(ctx, l, 0, AgentRecord{Name: "a1", Exchange: "a1:1"})
	if err != nil {
		t.Fatal(err)
	}
	states := c.FollowFrom(ctx, rev+1)
	<-states // the keys as they were at the registration
	for i := range 5 {
		if err := c.PublishFigures(ctx, l, "a1", Figures{Fetched: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	srev, err := c.ChangeSettings(ctx, 0, map[string]any{"host-delay": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	st := <-states
	if st.Rev != srev {
		t.Fatalf("the agent's watch delivered revision %d before the settings' %d: figures reached it", st.Rev, srev)
	}
	if f := st.Agents["a1"].Figures; f != (Figures{}) {
		t.Fatalf("the agent's watch carries figures %+v", f)
	}
	all, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f := all.Agents["a1"].Figures; f.Fetched != 5 {
		t.Fatalf("a whole read has figures %+v, want Fetched 5", f)
	}
}

// oneMemberCrawl returns a crawl on one embedded member under the
// authority of key byte b, and a context that ends with the test (20 s).
func oneMemberCrawl(t *testing.T, b byte) (*Crawl, context.Context) {
	t.Helper()
	a := testAuthority(t, b)
	_, cs := startMembers(t, a, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return NewCrawl(dial(t, a, cs), "t"), ctx
}

func grant(t *testing.T, ctx context.Context, c *Crawl) *Lease {
	t.Helper()
	l, err := GrantLease(ctx, c.cli, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
