package frontier

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// newFakeClock returns a clock moved by hand.
func newFakeClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// sim drives a scheduler on a fake clock without its goroutine: a discrete
// event simulation in which DNS answers at once, each fetch takes the time
// its answer says, and the clock jumps from one event to the next. Every
// time it records is exact, so politeness can be asserted to the
// nanosecond.
type sim struct {
	t     *testing.T
	f     *Frontier
	s     *scheduler
	clock *clock.Manual
	ready *diskq.Queue
	addrs map[string]netip.Addr // DNS answers; a missing name fails
	dnsOK func(host string, fails int) bool

	flying []simFetch
	log    []simFetch
	check  func() // called after every step (nil: checkQueued)
}

type simFetch struct {
	task       *Task
	url        string
	robots     bool
	start, end time.Time
	out        Outcome
}

// simAnswer says how a fetch goes and how long it takes.
type simAnswer func(t *Task) (Outcome, time.Duration)

func newSim(t *testing.T, cfg Config, addrs map[string]netip.Addr) *sim {
	t.Helper()
	ready, err := diskq.Open(t.TempDir(), diskq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ready.Close() })
	if cfg.Virtualizer == nil {
		virt, err := diskq.OpenQueues(t.TempDir(), diskq.Options{SegmentBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { virt.Close() })
		cfg.Virtualizer = virt
	}
	clock := newFakeClock()
	cfg.Clock, cfg.Ready = clock, ready
	if cfg.Stats == nil {
		cfg.Stats = new(stats.Crawl)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, f: f, s: f.sched, clock: clock, ready: ready, addrs: addrs}
}

// add queues raw with m, as the sieve would (straight to the ready queue).
func (m *sim) add(raw string, meta Meta) {
	m.t.Helper()
	u, err := urlx.Parse(raw)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := m.ready.Push(AppendRecord(nil, meta, u.String())); err != nil {
		m.t.Fatal(err)
	}
	m.f.stats.Ready.Add(1)
}

// resolve answers every resolution asked for.
func (m *sim) resolve() {
	s := m.s
	for len(s.dns.backlog) > 0 {
		h := s.dns.backlog[0]
		s.dns.sent()
		r := dnsResult{host: h}
		a, ok := m.addrs[h.name]
		if ok && (m.dnsOK == nil || m.dnsOK(h.name, h.fails())) {
			r.addr = a
		} else {
			r.err = fmt.Errorf("no answer for %s", h.name)
		}
		s.resolved(r)
		m.step()
	}
}

func (m *sim) step() {
	m.t.Helper()
	if m.check != nil {
		m.check()
	} else if err := m.s.checkQueued(); err != nil {
		m.t.Fatal(err)
	}
}

// run simulates until nothing is left or limit events have happened.
func (m *sim) run(answer simAnswer, limit int) {
	m.t.Helper()
	s := m.s
	for n := 0; n < limit; n++ {
		for s.fill() {
			m.step()
		}
		m.step()
		m.resolve()
		s.dns.due(m.f.now())
		m.resolve()
		if t := s.next(m.f.now()); t != nil {
			m.step()
			o, d := answer(t)
			o.Task = t
			start := m.clock.Now()
			m.flying = append(m.flying, simFetch{task: t, url: t.URL(), robots: t.Robots, start: start, end: start.Add(d), out: o})
			continue
		}
		if (s.dist.held != nil && s.dist.active < s.dist.front) || len(s.dns.backlog) > 0 {
			continue // as step: room in the front for the held record; as wait: DNS to ask
		}
		// Nothing to start now: jump to the next event.
		next, ok := s.nextWake()
		at := m.f.base.Add(time.Duration(next))
		if len(m.flying) > 0 {
			sort.SliceStable(m.flying, func(i, j int) bool { return m.flying[i].end.Before(m.flying[j].end) })
			if e := m.flying[0].end; !ok || e.Before(at) || e.Equal(at) {
				m.finish()
				continue
			}
		}
		if !ok {
			if s.queuedURLs != 0 || s.dist.held != nil || m.ready.Len() > 0 {
				m.t.Fatalf("simulation stuck: %d queued, held %v, %d ready, front %d/%d, err %v", s.queuedURLs, s.dist.held != nil, m.ready.Len(), s.dist.active, s.dist.front, s.err)
			}
			return
		}
		if d := at.Sub(m.clock.Now()); d > 0 {
			m.clock.Advance(d)
		}
	}
	m.t.Fatalf("simulation did not end in %d events", limit)
}

// finish ends the fetch that ends first.
func (m *sim) finish() {
	fe := m.flying[0]
	m.flying = m.flying[1:]
	if d := fe.end.Sub(m.clock.Now()); d > 0 {
		m.clock.Advance(d)
	}
	o := fe.out
	o.End = fe.end
	if o.Duration == 0 {
		o.Duration = fe.end.Sub(fe.start)
	}
	m.s.release(o)
	m.log = append(m.log, fe)
	m.step()
}

// gaps returns, per group, the gaps between one fetch's end and the next
// one's start, in start order, checking that none overlap.
func (m *sim) gaps(group func(simFetch) string) map[string][]time.Duration {
	m.t.Helper()
	by := map[string][]simFetch{}
	for _, r := range m.log {
		by[group(r)] = append(by[group(r)], r)
	}
	out := map[string][]time.Duration{}
	for g, rs := range by {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			out[g] = append(out[g], rs[i].start.Sub(rs[i-1].end))
		}
	}
	return out
}

func simKey(r simFetch) string  { return r.task.SchemeAuthority }
func simAddr(r simFetch) string { return r.task.Addr.String() }

func fetched(d time.Duration) simAnswer {
	return func(t *Task) (Outcome, time.Duration) {
		if t.Robots {
			return Outcome{Result: Fetched, Robots: allowAll{}}, d
		}
		return Outcome{Result: Fetched}, d
	}
}

var _ = context.Background
