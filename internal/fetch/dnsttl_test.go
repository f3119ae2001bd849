package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// ttlServer is a DNS server on a loopback address answering A questions
// for the names of ttls with 192.0.2.7 and that TTL (seconds), any other
// name with NXDOMAIN and an SOA whose minimum is negTTL, and AAAA
// questions with no record and no SOA. It counts the A questions by name.
type ttlServer struct {
	pc     net.PacketConn
	ttls   map[string]uint32
	negTTL uint32
	mu     sync.Mutex
	asked  map[string]int
}

func newTTLServer(t testing.TB, ip string, ttls map[string]uint32, negTTL uint32) *ttlServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &ttlServer{pc: pc, ttls: ttls, negTTL: negTTL, asked: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := s.answer(buf[:n]); ok {
				pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	return s
}

func (s *ttlServer) answer(msg []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	ttl, known := s.ttls[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.StartQuestions()
	b.Question(q)
	switch {
	case known && q.Type == dnsmessage.TypeA:
		s.mu.Lock()
		s.asked[name]++
		s.mu.Unlock()
		b.StartAnswers()
		b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: ttl}, dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}})
	case !known:
		if q.Type == dnsmessage.TypeA {
			s.mu.Lock()
			s.asked[name]++
			s.mu.Unlock()
		}
		b.StartAuthorities()
		b.SOAResource(dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName("org."), Class: dnsmessage.ClassINET, TTL: 3600},
			dnsmessage.SOAResource{NS: dnsmessage.MustNewName("ns.org."), MBox: dnsmessage.MustNewName("hostmaster.org."), Serial: 1,
				Refresh: 3600, Retry: 600, Expire: 86400, MinTTL: s.negTTL})
	}
	out, err := b.Finish()
	return out, err == nil
}

func (s *ttlServer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[name]
}

// TestResolverKeepsDNSTTL: answers from DNS are cached for their TTL, kept
// within [MinTTL, TTL]; a "no such host" for its SOA's minimum, kept
// within [MinTTL, NegativeTTL]. The resolver asks a loopback DNS server
// (never the system's).
func TestResolverKeepsDNSTTL(t *testing.T) {
	srv := newTTLServer(t, "127.41.9.2", map[string]uint32{"short.org": 20, "tiny.org": 1, "long.org": 86400}, 30)
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	r := NewResolver(ResolverOptions{System: true, Server: srv.pc.LocalAddr().String(), TTL: time.Hour, MinTTL: 5 * time.Second})
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	look := func(name string) {
		t.Helper()
		addrs, err := r.Lookup(context.Background(), name)
		if name == "gone.org" {
			if !errors.Is(err, ErrNoSuchHost) {
				t.Fatalf("%s: %v, want no such host", name, err)
			}
			return
		}
		if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("192.0.2.7") {
			t.Fatalf("%s: %v %v", name, addrs, err)
		}
	}
	for _, n := range []string{"short.org", "tiny.org", "long.org", "gone.org"} {
		look(n)
	}
	steps := []struct {
		after time.Duration
		want  map[string]int // questions asked by then, each name looked up again first
	}{
		{4 * time.Second, map[string]int{"short.org": 1, "tiny.org": 1, "long.org": 1, "gone.org": 1}},  // within MinTTL: cached
		{2 * time.Second, map[string]int{"short.org": 1, "tiny.org": 2, "long.org": 1, "gone.org": 1}},  // tiny.org's 1 s raised to MinTTL
		{15 * time.Second, map[string]int{"short.org": 2, "tiny.org": 3, "long.org": 1, "gone.org": 1}}, // short.org's 20 s
		{10 * time.Second, map[string]int{"short.org": 2, "tiny.org": 4, "long.org": 1, "gone.org": 2}}, // gone.org's SOA minimum, 30 s
		{time.Hour, map[string]int{"short.org": 3, "tiny.org": 5, "long.org": 2, "gone.org": 3}},        // long.org's day cut to TTL
	}
	for i, st := range steps {
		advance(st.after)
		for n, want := range st.want {
			look(n)
			if got := srv.count(n); got != want {
				t.Errorf("step %d: %s asked %d times, want %d", i, n, got, want)
			}
		}
	}
}

// TestAnswerTTL reads the TTL of DNS answers: the least of the answer
// records, else the SOA's (the lesser of its TTL and minimum); nothing
// from a query or a message without either.
func TestAnswerTTL(t *testing.T) {
	srv := &ttlServer{ttls: map[string]uint32{"a.org": 300}, negTTL: 60, asked: map[string]int{}}
	q := func(name string, typ dnsmessage.Type) []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		m, _ := b.Finish()
		return m
	}
	resp := func(name string, typ dnsmessage.Type) []byte {
		m, ok := srv.answer(q(name, typ))
		if !ok {
			t.Fatal("no answer")
		}
		return m
	}
	for _, c := range []struct {
		what string
		msg  []byte
		name string
		ttl  time.Duration
		ok   bool
	}{
		{"A record", resp("A.org.", dnsmessage.TypeA), "a.org", 300 * time.Second, true},
		{"NXDOMAIN with SOA", resp("b.org.", dnsmessage.TypeA), "b.org", 60 * time.Second, true},
		{"NODATA without SOA", resp("a.org.", dnsmessage.TypeAAAA), "", 0, false},
		{"a query", q("a.org.", dnsmessage.TypeA), "", 0, false},
		{"garbage", []byte("not dns"), "", 0, false},
	} {
		name, ttl, ok := answerTTL(c.msg)
		if name != c.name || ttl != c.ttl || ok != c.ok {
			t.Errorf("%s: %q %v %v, want %q %v %v", c.what, name, ttl, ok, c.name, c.ttl, c.ok)
		}
	}
}

// BenchmarkResolverCached100k: a lookup of one of 10^5 names held in the
// cache (an active host's), from parallel goroutines.
func BenchmarkResolverCached100k(b *testing.B) {
	const n = 100000
	r := NewResolver(ResolverOptions{System: true, MaxEntries: n})
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("192.0.2.7")}, nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "host-" + strconv.Itoa(i) + ".org"
		if _, err := r.Lookup(context.Background(), names[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := r.Lookup(context.Background(), names[i%n]); err != nil {
				b.Fatal(err)
			}
			i += 7919
		}
	})
}

// BenchmarkResolverQuery: a lookup of a name not cached, asked of a DNS
// server on loopback (A and AAAA over UDP, the TTL read), into a cache
// full at 10^5 entries (each new name evicts one).
func BenchmarkResolverQuery(b *testing.B) {
	srv := newTTLServer(b, "127.41.9.3", map[string]uint32{}, 60)
	r := NewResolver(ResolverOptions{System: true, Server: srv.pc.LocalAddr().String(), MaxEntries: 100000})
	for i := range 100000 {
		r.store("filler-"+strconv.Itoa(i)+".org", cacheEntry{addrs: []netip.Addr{netip.MustParseAddr("192.0.2.7")}, expires: time.Now().Add(time.Hour)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := r.Lookup(context.Background(), "new-"+strconv.Itoa(i)+".org"); !errors.Is(err, ErrNoSuchHost) {
			b.Fatal(err)
		}
	}
}
