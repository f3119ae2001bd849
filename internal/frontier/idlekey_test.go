package frontier

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// forgetHost has the DNS stage forget name, loose, as trim does past
// HostCache.
func forgetHost(t *testing.T, s *scheduler, name string) {
	t.Helper()
	h := s.dns.hosts[name]
	if h == nil || !h.loose() {
		t.Fatalf("host %s held: %+v", name, h)
	}
	delete(s.dns.hosts, name)
	s.dns.loose--
}

// idleSim runs one page of a.test (and its robots.txt) to its end, with
// a.test and b.test on one address, and returns the sim with a.test's key
// idle and its host forgotten.
func idleSim(t *testing.T, set Settings) *sim {
	ip := netip.MustParseAddr("10.9.9.1")
	m := newSim(t, Config{Settings: set}, map[string]netip.Addr{"a.test": ip, "b.test": ip})
	m.add("http://a.test/p0", Meta{})
	m.run(fetched(50*time.Millisecond), 1000)
	s := m.s
	if len(s.states) != 0 || len(s.idleKeys) != 1 {
		t.Fatalf("%d visit states, %d idle keys, want the key idle", len(s.states), len(s.idleKeys))
	}
	forgetHost(t, s, "a.test")
	return m
}

// TestSimIdleKeyPoliteness: a key that went idle and whose host the DNS
// stage forgot keeps its delay and its address: a URL that comes back
// before the host delay is over waits it out to the nanosecond, with no
// resolution, and the address's IP delay holds for another host.
func TestSimIdleKeyPoliteness(t *testing.T) {
	m := idleSim(t, Settings{HostDelay: time.Second, IPDelay: 300 * time.Millisecond})
	s := m.s
	m.clock.Advance(100 * time.Millisecond)
	m.add("http://a.test/p1", Meta{})
	m.add("http://b.test/q0", Meta{})
	for s.fill() {
	}
	if h := s.dns.hosts["a.test"]; h == nil || !h.resolved || h.addr != netip.MustParseAddr("10.9.9.1") {
		t.Fatalf("a.test after its key woke: %+v, want resolved at its old address", h)
	}
	if len(s.idleKeys) != 0 {
		t.Fatalf("%d idle keys after the key woke", len(s.idleKeys))
	}
	m.run(fetched(50*time.Millisecond), 1000)
	if gs := m.gaps(simKey)["http://a.test"]; len(gs) != 2 || gs[1] != time.Second {
		t.Errorf("a.test gaps %v, want the page after the idle period exactly the host delay after the one before", gs)
	}
	for a, gs := range m.gaps(simAddr) {
		for _, g := range gs {
			if g < 300*time.Millisecond {
				t.Errorf("%s: gap %v < IP delay", a, g)
			}
		}
	}
	lookups := 0
	for _, r := range m.log {
		if r.task.SchemeAuthority == "http://a.test" {
			lookups++
		}
	}
	if lookups != 3 {
		t.Errorf("%d fetches of a.test, want robots.txt and two pages (robots.txt not fetched again)", lookups)
	}
}

// TestSimIdleKeyBudget: the pages an idle key had count against
// MaxURLsPerKey when it wakes.
func TestSimIdleKeyBudget(t *testing.T) {
	m := idleSim(t, Settings{HostDelay: 100 * time.Millisecond, MaxURLsPerKey: 2})
	for i := 1; i < 4; i++ {
		m.add(fmt.Sprintf("http://a.test/p%d", i), Meta{})
	}
	m.run(fetched(10*time.Millisecond), 1000)
	pages := 0
	for _, r := range m.log {
		if !r.robots {
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d pages of a.test, want 2 (MaxURLsPerKey, one before the idle period)", pages)
	}
}

// TestSimIdleKeyReconfigure: a host delay raised while a key is idle
// moves its next fetch time as it moves a visit state's.
func TestSimIdleKeyReconfigure(t *testing.T) {
	m := idleSim(t, Settings{HostDelay: 200 * time.Millisecond})
	set := *m.s.set
	set.HostDelay = time.Second
	m.s.reconfigure(&set)
	m.add("http://a.test/p1", Meta{})
	m.run(fetched(10*time.Millisecond), 1000)
	if gs := m.gaps(simKey)["http://a.test"]; len(gs) != 2 || gs[1] != time.Second {
		t.Errorf("a.test gaps %v, want the raised host delay before the page after the idle period", gs)
	}
}

// TestSimIdleKeyMovesOut: an idle key of an address another agent now
// owns counts in that address's wait (MoveOut's), and its next URL makes
// a visit state handed over to that agent.
func TestSimIdleKeyMovesOut(t *testing.T) {
	ip := netip.MustParseAddr("10.9.9.2")
	r := &movingRouter{addrB: ip, sent: map[string]Peer{}}
	r.owner.Store(Self)
	m := newSim(t, Config{Router: r, Settings: Settings{HostDelay: time.Second}}, map[string]netip.Addr{"a.test": ip})
	m.add("http://a.test/p0", Meta{})
	m.run(fetched(10*time.Millisecond), 1000)
	s := m.s
	if len(s.idleKeys) != 1 {
		t.Fatalf("%d idle keys", len(s.idleKeys))
	}
	r.owner.Store(Peer("new"))
	m.clock.Advance(300 * time.Millisecond)
	waits := map[netip.Addr]time.Duration{}
	s.idleWaits(map[*ipEntry]bool{s.wb.byAddr[ip]: true}, m.f.now(), waits)
	if waits[ip] != 700*time.Millisecond {
		t.Errorf("wait %v, want the key's remaining 700ms", waits[ip])
	}
	m.add("http://a.test/p1", Meta{})
	for s.fill() {
	}
	if got := r.sentTo("http://a.test/p1"); got != "new" {
		t.Errorf("a.test/p1 forwarded to %q, want the address's new owner", got)
	}
	if v := s.states["http://a.test"]; v == nil || v.gen != 1 || v.movedTo() != "new" {
		t.Errorf("visit state %+v, want handed over (generation 1)", v)
	}
}

// TestKeyQueueIdleKey: the console's questions about a key that went idle
// are answered from its idle key: its budget used, its address, its
// robots.txt.
func TestKeyQueueIdleKey(t *testing.T) {
	res := mapResolver{"a.test": netip.MustParseAddr("10.8.1.1"), "b.test": netip.MustParseAddr("10.8.1.2")}
	h := newHarness(t, Config{Settings: Settings{HostDelay: time.Millisecond, MaxURLsPerKey: 10}, Resolver: res})
	h.enqueue("http://a.test/p0")
	h.enqueue("http://b.test/p0")
	gate, blocked := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- h.run(2, func(tk *Task) Outcome {
			if tk.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{delay: 7 * time.Millisecond}}
			}
			if tk.URL() == "http://b.test/p0" {
				close(blocked)
				<-gate
			}
			return Outcome{Result: Fetched}
		})
	}()
	defer func() {
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	<-blocked
	ctx := context.Background()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var idle int
		if err := h.f.do(ctx, func(s *scheduler) { idle = len(s.idleKeys) }); err != nil {
			t.Fatal(err)
		}
		if idle == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("a.test's key did not go idle")
		}
	}
	k, ram, disk, budget, ok, err := h.f.KeyQueue(ctx, "a.test")
	if err != nil || !ok || k.Key != "http://a.test" || k.Host != "a.test" || k.Pages != 1 || k.Queued != 0 ||
		k.Addr != res["a.test"] || budget != 1 || len(ram)+len(disk) != 0 || k.DelayWhy != DelayCrawlDelay {
		t.Errorf("KeyQueue(a.test) of an idle key = %+v, %v, %v, budget %d, %v, %v", k, ram, disk, budget, ok, err)
	}
	if hi, err := h.f.Host(ctx, "a.test"); err != nil || !hi.Robots["http://a.test"].Fetched {
		t.Errorf("Host(a.test) = %+v, %v, want its robots.txt held", hi, err)
	}
}

// TestKeyQueueHostKey: under --assign host a key holds more than one
// authority; the console's question about it answers with the budget used
// by the authority of its next URL (it panicked on the empty prefix).
func TestKeyQueueHostKey(t *testing.T) {
	assign, err := ParseAssign("host")
	if err != nil {
		t.Fatal(err)
	}
	res := mapResolver{"a.test": netip.MustParseAddr("10.8.2.1")}
	h := newHarness(t, Config{Settings: Settings{HostDelay: 50 * time.Millisecond, MaxURLsPerKey: 10, Assign: assign}, Resolver: res})
	for _, u := range []string{"http://a.test/p0", "https://a.test/p1", "http://a.test/p2"} {
		h.enqueue(u)
	}
	first, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		var once sync.Once
		done <- h.run(1, func(tk *Task) Outcome {
			if tk.Robots {
				return Outcome{Result: Fetched, Robots: allowAll{}}
			}
			once.Do(func() { close(first) })
			<-gate
			return Outcome{Result: Fetched}
		})
	}()
	<-first // one page in flight, the others queued behind it
	k, ram, disk, budget, ok, err := h.f.KeyQueue(context.Background(), "a.test")
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil || !ok || k.Host != "a.test" || len(ram)+len(disk) != 2 || budget < 1 {
		t.Errorf("KeyQueue(a.test) = %+v, %v, %v, budget %d, %v, %v", k, ram, disk, budget, ok, err)
	}
}
