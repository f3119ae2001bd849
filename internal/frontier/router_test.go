package frontier

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func TestAssignGroup(t *testing.T) {
	for _, c := range []struct{ policy, url, want string }{
		{"authority", "http://a.test:8080/x", "a.test"},
		{"authority", "https://[::1]:8443/x", "::1"},
		{"host", "https://a.test/y", "a.test"},
		{"url", "http://a.test/x?q", "a.test"},
		{"ip", "http://a.test/x", "a.test"},
		{"domain", "http://a.b.example.co.uk/z", "example.co.uk"},
	} {
		a, err := ParseAssign(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		if g := a.Group([]byte(c.url)); g != c.want {
			t.Errorf("%s: Group(%s) = %q, want %q", c.policy, c.url, g, c.want)
		}
	}
	// Every URL of one key has one group, whatever the policy.
	for _, policy := range []string{"authority", "host", "domain", "bucket:7", "url", "ip"} {
		a, _ := ParseAssign(policy)
		byKey := map[string]string{}
		for i := 0; i < 300; i++ {
			raw := fmt.Sprintf("http://h%d.d%d.example.test:%d/p%d", i%17, i%5, 80+i%2, i)
			u, err := urlx.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			url := []byte(u.String())
			k, g := a.Key(url), a.Group(url)
			if prev, ok := byKey[k]; ok && prev != g {
				t.Fatalf("%s: key %q has groups %q and %q", policy, k, prev, g)
			}
			byKey[k] = g
		}
	}
	b, _ := ParseAssign("bucket:7")
	if g := b.Group([]byte("http://a.test/")); !strings.HasPrefix(g, "bucket:") || g != b.Group([]byte("http://a.test/other")) {
		t.Errorf("bucket group %q", g)
	}
}

// splitRouter owns the hosts whose name starts with mine and forwards the
// others' records to a second agent.
type splitRouter struct {
	mine string
	mu   sync.Mutex
	sent [][]byte
	addr func(netip.Addr) Peer
}

func (r *splitRouter) OwnerOf(url []byte) Peer {
	a, _ := ParseAssign("authority")
	if strings.HasPrefix(a.Group(url), r.mine) {
		return Self
	}
	return "other"
}

func (r *splitRouter) Forward(to Peer, rec []byte) error {
	if to != "other" {
		return fmt.Errorf("forward to %q", to)
	}
	r.mu.Lock()
	r.sent = append(r.sent, append([]byte(nil), rec...))
	r.mu.Unlock()
	return nil
}

func (r *splitRouter) AddrOwner(a netip.Addr) Peer {
	if r.addr != nil {
		return r.addr(a)
	}
	return Self
}

// TestRouterSeam crawls with a router that owns half the hosts: the
// frontier fetches exactly its own, forwards the others' records with
// their Meta, and a second frontier given them by Accept fetches them.
func TestRouterSeam(t *testing.T) {
	res := mapResolver{}
	for i := 0; i < 4; i++ {
		res[fmt.Sprintf("a%d.test", i)] = netip.MustParseAddr(fmt.Sprintf("10.3.0.%d", i+1))
		res[fmt.Sprintf("b%d.test", i)] = netip.MustParseAddr(fmt.Sprintf("10.3.1.%d", i+1))
	}
	r := &splitRouter{mine: "a"}
	h := newHarness(t, Config{Resolver: res, Router: r})
	var want, wantOther []string
	for i := 0; i < 40; i++ {
		for _, p := range []string{"a", "b"} {
			raw := fmt.Sprintf("http://%s%d.test/p%d", p, i%4, i)
			u, _ := urlx.Parse(raw)
			if err := h.f.Enqueue(u, Meta{Depth: 2, Seed: 7, Via: uint64(i)}); err != nil {
				t.Fatal(err)
			}
			if p == "a" {
				want = append(want, raw)
			} else {
				wantOther = append(wantOther, raw)
			}
		}
	}
	if err := h.run(4, nil); err != nil {
		t.Fatal(err)
	}
	got := h.pages()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("fetched %d pages %v, want its own %d", len(got), got, len(want))
	}
	h2 := newHarness(t, Config{Resolver: res})
	for _, rec := range r.sent {
		m, url, err := SplitRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if m.Depth != 2 || m.Seed != 7 {
			t.Errorf("forwarded %s with %+v", url, m)
		}
		if err := h2.f.Accept(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := h2.run(4, nil); err != nil {
		t.Fatal(err)
	}
	got = h2.pages()
	slices.Sort(got)
	slices.Sort(wantOther)
	if !slices.Equal(got, wantOther) {
		t.Fatalf("the owner fetched %v, want %v", got, wantOther)
	}
	if err := h2.f.Accept([]byte("\x00short")); err == nil {
		t.Error("Accept took a record without metadata")
	}
}

// readySplit is a splitRouter that also forwards ready URLs (a
// ReadyRouter), keeping them.
type readySplit struct {
	splitRouter
	ready [][]byte
}

func (r *readySplit) ReadyOwner([]byte) Peer { return Self }
func (r *readySplit) ForwardReady(to Peer, rec []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready = append(r.ready, append([]byte(nil), ReadyRecord(rec)...)) // as its receiver reads it
	return nil
}

// TestAddrOwnedElsewhere: the URLs of a host whose address another agent
// fetches from are handed to it (ForwardReady), none fetched here; without
// a ReadyRouter that is an error.
func TestAddrOwnedElsewhere(t *testing.T) {
	res := mapResolver{"a.test": netip.MustParseAddr("10.4.0.1"), "b.test": netip.MustParseAddr("10.4.0.2")}
	other := func(a netip.Addr) Peer {
		if a == netip.MustParseAddr("10.4.0.2") {
			return "other"
		}
		return Self
	}
	r := &readySplit{splitRouter: splitRouter{mine: "", addr: other}}
	h := newHarness(t, Config{Resolver: res, Router: r})
	for i := 0; i < 5; i++ {
		h.enqueue(fmt.Sprintf("http://b.test/x%d", i))
		h.enqueue(fmt.Sprintf("http://a.test/x%d", i))
	}
	if err := h.run(2, nil); err != nil {
		t.Fatal(err)
	}
	for _, rec := range h.log {
		if rec.addr == netip.MustParseAddr("10.4.0.2") {
			t.Fatalf("fetched %s from an address owned elsewhere", rec.url)
		}
	}
	if len(h.pages()) != 5 || len(r.ready) != 5 {
		t.Fatalf("fetched %d, handed over %d; want 5 and 5", len(h.pages()), len(r.ready))
	}
	for _, rec := range r.ready {
		if !strings.HasPrefix(string(rec[MetaLen:]), "http://b.test/x") {
			t.Fatalf("handed over %q", rec[MetaLen:])
		}
	}
	h2 := newHarness(t, Config{Resolver: res, Router: &splitRouter{mine: "", addr: other}})
	h2.enqueue("http://b.test/x")
	if err := h2.run(2, nil); err == nil {
		t.Fatal("an address owned elsewhere without a ReadyRouter did not fail")
	}
}

// onRouter is a splitRouter that tells apart the records Accept sends on.
type onRouter struct {
	splitRouter
	on [][]byte
}

func (r *onRouter) ForwardOn(to Peer, rec []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = append(r.on, append([]byte(nil), rec...))
	return nil
}

// TestAcceptForwardsOn: a record Accept is given for a key this agent does
// not own goes to the router's ForwardOn, not Forward (the agent counts it
// as forwarded, not as sent).
func TestAcceptForwardsOn(t *testing.T) {
	res := mapResolver{"a0.test": netip.MustParseAddr("10.3.0.1"), "b0.test": netip.MustParseAddr("10.3.1.1")}
	r := &onRouter{splitRouter: splitRouter{mine: "a"}}
	h := newHarness(t, Config{Resolver: res, Router: r})
	u, _ := urlx.Parse("http://b0.test/y")
	if err := h.f.Enqueue(u, Meta{Depth: 1}); err != nil {
		t.Fatal(err)
	}
	if len(r.sent) != 1 || len(r.on) != 0 {
		t.Fatalf("enqueued a URL of another owner: %d forwarded, %d sent on; want 1, 0", len(r.sent), len(r.on))
	}
	if err := h.f.Accept(r.sent[0]); err != nil {
		t.Fatal(err)
	}
	if len(r.sent) != 1 || len(r.on) != 1 || string(r.on[0]) != string(r.sent[0]) {
		t.Fatalf("accepted a record of another owner: %d forwarded, %d sent on; want 1, 1 (the record)", len(r.sent), len(r.on))
	}
}
