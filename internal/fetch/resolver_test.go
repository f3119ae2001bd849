package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseHostsFile(t *testing.T) {
	in := `# synthetic web
127.41.1.1   a.test  WWW.A.test.
127.41.1.2	b.test # trailing comment

::1 v6.test
127.41.1.3 a.test
127.41.1.1 a.test
`
	hosts, err := ParseHostsFile(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ParseHostsFile: %v", err)
	}
	want := map[string][]string{
		"a.test":     {"127.41.1.1", "127.41.1.3"},
		"www.a.test": {"127.41.1.1"},
		"b.test":     {"127.41.1.2"},
		"v6.test":    {"::1"},
	}
	if len(hosts) != len(want) {
		t.Errorf("got %d names, want %d: %v", len(hosts), len(want), hosts)
	}
	for name, addrs := range want {
		got := hosts[name]
		if len(got) != len(addrs) {
			t.Errorf("%s: %v, want %v", name, got, addrs)
			continue
		}
		for i := range addrs {
			if got[i].String() != addrs[i] {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[i], addrs[i])
			}
		}
	}

	bad := []struct{ in, line string }{
		{"127.0.0.1 ok.test\nnot-an-ip x.test\n", "line 2"},
		{"# c\n\n127.0.0.1\n", "line 3"},
		{"127.0.0.1 a/b\n", "line 1"},
	}
	for _, b := range bad {
		_, err := ParseHostsFile(strings.NewReader(b.in))
		if err == nil || !strings.Contains(err.Error(), b.line) {
			t.Errorf("ParseHostsFile(%q) error %v, want one naming %s", b.in, err, b.line)
		}
	}
}

func TestResolverHostsAndLiterals(t *testing.T) {
	r := NewResolver(ResolverOptions{
		Hosts:  map[string][]netip.Addr{"Site.TEST": {netip.MustParseAddr("127.41.2.1")}, "localhost": {netip.MustParseAddr("127.0.0.1")}},
		System: true,
	})
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		t.Errorf("DNS queried for %q", host)
		return nil, errors.New("no DNS in tests")
	}
	cases := []struct {
		host string
		want string
		err  error
	}{
		{"site.test", "127.41.2.1", nil},
		{"SITE.test.", "127.41.2.1", nil},
		{"localhost", "127.0.0.1", nil},
		{"192.0.2.7", "192.0.2.7", nil},
		{"[2001:db8::1]", "2001:db8::1", nil},
		{"::ffff:192.0.2.8", "192.0.2.8", nil},
		{"absent.test", "", ErrSpecialUseName},
		{"x.invalid", "", ErrSpecialUseName},
		{"invalid", "", ErrSpecialUseName},
		{"foo.localhost", "", ErrSpecialUseName},
		{"www.example", "", ErrSpecialUseName},
		{"hidden.onion", "", ErrSpecialUseName},
		{"", "", ErrNoSuchHost},
	}
	for _, c := range cases {
		addrs, err := r.Lookup(context.Background(), c.host)
		if c.err != nil {
			if !errors.Is(err, c.err) || Classify(err) != ErrDNS {
				t.Errorf("Lookup(%q) = %v, %v; want %v", c.host, addrs, err, c.err)
			}
			continue
		}
		if err != nil || len(addrs) != 1 || addrs[0].String() != c.want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", c.host, addrs, err, c.want)
		}
	}
}

func TestResolverSpecialUseNeverReachesDNS(t *testing.T) {
	// The real system resolver: a special-use name must fail at once,
	// before any query could be sent.
	r := NewResolver(ResolverOptions{System: true, Timeout: 5 * time.Second})
	start := time.Now()
	_, err := r.Lookup(context.Background(), "nowhere.petrel.test")
	if !errors.Is(err, ErrSpecialUseName) {
		t.Fatalf("Lookup: %v, want ErrSpecialUseName", err)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("special-use lookup took %v; it must not wait for DNS", d)
	}
	if r.Len() != 0 {
		t.Error("special-use failure was cached as a DNS answer")
	}
	// Without System, an unknown name fails without DNS too.
	r2 := NewResolver(ResolverOptions{})
	if _, err := r2.Lookup(context.Background(), "www.petrel-example.org"); !errors.Is(err, ErrNoSuchHost) {
		t.Errorf("Lookup without System: %v, want ErrNoSuchHost", err)
	}
}

func TestResolverCacheAndTTL(t *testing.T) {
	var (
		mu      sync.Mutex
		now     = time.Unix(1_000_000, 0)
		queries = map[string]int{}
	)
	r := NewResolver(ResolverOptions{System: true, TTL: time.Minute, NegativeTTL: 10 * time.Second, MaxEntries: 3})
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		mu.Lock()
		queries[host]++
		mu.Unlock()
		switch host {
		case "missing.org":
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		case "flaky.org":
			return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
		}
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	}
	look := func(host string) error {
		_, err := r.Lookup(context.Background(), host)
		return err
	}
	count := func(host string) int { mu.Lock(); defer mu.Unlock(); return queries[host] }

	for range 3 {
		if err := look("ok.org"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count("ok.org"); n != 1 {
		t.Errorf("ok.org queried %d times within TTL, want 1", n)
	}
	advance(61 * time.Second)
	look("ok.org")
	if n := count("ok.org"); n != 2 {
		t.Errorf("ok.org queried %d times after TTL, want 2", n)
	}

	for range 2 {
		if err := look("missing.org"); !errors.Is(err, ErrNoSuchHost) {
			t.Errorf("missing.org: %v, want ErrNoSuchHost", err)
		}
	}
	if n := count("missing.org"); n != 1 {
		t.Errorf("missing.org queried %d times within negative TTL, want 1", n)
	}
	advance(11 * time.Second)
	look("missing.org")
	if n := count("missing.org"); n != 2 {
		t.Errorf("missing.org queried %d times after negative TTL, want 2", n)
	}

	for range 2 {
		if err := look("flaky.org"); err == nil || Classify(err) != ErrDNS {
			t.Errorf("flaky.org: %v", err)
		}
	}
	if n := count("flaky.org"); n != 2 {
		t.Errorf("temporary failures cached: %d queries, want 2", n)
	}

	for _, h := range []string{"a.org", "b.org", "c.org", "d.org", "e.org"} {
		look(h)
		if r.Len() > 3 {
			t.Fatalf("cache holds %d entries, bound is 3", r.Len())
		}
	}
}

func TestResolverSharedQuery(t *testing.T) {
	var queries atomic.Int32
	release := make(chan struct{})
	r := NewResolver(ResolverOptions{System: true})
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		queries.Add(1)
		<-release
		return []netip.Addr{netip.MustParseAddr("192.0.2.9")}, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Lookup(context.Background(), "shared.org"); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := queries.Load(); n != 1 {
		t.Errorf("%d queries for concurrent lookups of one name, want 1", n)
	}

	// A caller whose context ends gets its error at once.
	block := make(chan struct{})
	defer close(block)
	r.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := r.Lookup(ctx, "slow.org"); !errors.Is(err, context.DeadlineExceeded) || Classify(err) != ErrTimeout {
		t.Errorf("Lookup with expired context: %v", err)
	}
}

func TestGuard(t *testing.T) {
	cases := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", false},
		{"127.41.0.1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"255.255.255.255", false},
		{"224.0.0.1", false},
		{"239.1.1.1", false},
		{"::1", false},
		{"::", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"8.8.8.8", true},
		{"100.63.255.255", true},
		{"100.128.0.0", true},
		{"172.32.0.1", true},
		{"192.0.2.1", true},
		{"2001:db8::1", true},
		{"2606:4700::1111", true},
		{"::ffff:8.8.8.8", true},
	}
	for _, c := range cases {
		a := netip.MustParseAddr(c.addr)
		err := Guard{}.Check(a)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s) = %v, want ok=%v", c.addr, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("Check(%s) error %v does not wrap ErrForbiddenAddress", c.addr, err)
		}
		if err := (Guard{AllowPrivate: true}).Check(a); err != nil {
			t.Errorf("AllowPrivate Check(%s) = %v", c.addr, err)
		}
	}
	if err := (Guard{AllowPrivate: true}).Check(netip.Addr{}); err == nil {
		t.Error("invalid address allowed")
	}
}

// TestResolverTimeoutOnLoopbackDNS points the system path at a DNS server
// on loopback that reads queries and never answers: a lookup must fail
// with a timeout after the configured bound, having reached that server
// (and no other).
func TestResolverTimeoutOnLoopbackDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.41.9.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	queries := make(chan struct{}, 16)
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			select {
			case queries <- struct{}{}:
			default:
			}
		}
	}()
	r := NewResolver(ResolverOptions{System: true, Server: pc.LocalAddr().String(), Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err = r.Lookup(context.Background(), "never-answers.petrel-dns-test.org")
	if err == nil {
		t.Fatal("lookup through a silent server succeeded")
	}
	if Classify(err) != ErrTimeout && Classify(err) != ErrDNS {
		t.Errorf("error %v classified %v, want a timeout or DNS failure", err, Classify(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("lookup took %v with a 300ms timeout", d)
	}
	select {
	case <-queries:
	default:
		t.Error("the loopback DNS server received no query")
	}
}
