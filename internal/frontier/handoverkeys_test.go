package frontier

import (
	"net/netip"
	"testing"
)

func TestHandoverKeyRecord(t *testing.T) {
	for _, k := range []HandoverKey{
		{Key: "http://a.test", Host: "a.test", Addr: netip.MustParseAddr("10.1.2.3"), Gen: 7, MovedTo: "agent2"},
		{Key: "example.test", Host: "www.example.test", Addr: netip.MustParseAddr("2001:db8::1"), Gen: 1 << 30},
		{Key: "k", Host: "h", Gen: 1},
	} {
		b := AppendHandoverKey(nil, k)
		got, err := ParseHandoverKey(b)
		if err != nil || got != k {
			t.Errorf("%+v: parsed %+v, %v", k, got, err)
		}
		for n := 0; n < len(b)-len(k.MovedTo); n++ {
			if _, err := ParseHandoverKey(b[:n]); err == nil {
				t.Errorf("%+v: %d bytes of %d parsed without an error", k, n, len(b))
			}
		}
	}
}

// handoverRouter owns the addresses mine selects (the others are agent
// "b"'s) and keeps the hand-over part of each record it forwards.
type handoverRouter struct {
	readySplit
	sent []Handover
}

func (r *handoverRouter) ForwardReady(to Peer, rec []byte) error {
	ho, _, ok, err := SplitHandover(rec)
	if err != nil || !ok || to != "b" {
		return errNoReadyRouter
	}
	r.mu.Lock()
	r.sent = append(r.sent, ho)
	r.mu.Unlock()
	return r.readySplit.ForwardReady(to, rec)
}

func newHandoverRouter(b netip.Addr) *handoverRouter {
	return &handoverRouter{readySplit: readySplit{splitRouter: splitRouter{addr: func(x netip.Addr) Peer {
		if x == b {
			return "b"
		}
		return Self
	}}}}
}

// TestRestartKeepsHandoverGenerations: a frontier restarted with the keys'
// hand-over state of the one before (HandoverKeys, Config.Handovers) is
// the holder it was. A holder of generation 3 at address A takes a record
// of generation 2 naming B (agent b's) as an ordinary record, fetched
// here at A; and an old holder that handed its key over to b forwards a
// record of the key to b with the generation it knew, although its
// resolver answers A (its own): without the saved state, the first would
// hand the key to b and the second would hold it beside b.
func TestRestartKeepsHandoverGenerations(t *testing.T) {
	addrA, addrB := netip.MustParseAddr("10.9.4.1"), netip.MustParseAddr("10.9.4.2")
	ho := func(gen uint32, a netip.Addr, u string) []byte {
		return AppendHandover(nil, Handover{Gen: gen, Addr: a}, AppendRecord(nil, Meta{}, u))
	}
	// The first run: a.test handed here at A (generation 3), b.test handed
	// here at B (generation 1) and so on to agent b (generation 2).
	res := &movingResolver{m: map[string]netip.Addr{"a.test": addrB, "b.test": addrA}}
	r := newHandoverRouter(addrB)
	h := newHarness(t, Config{Resolver: res, Router: r})
	for _, rec := range [][]byte{ho(3, addrA, "http://a.test/1"), ho(1, addrB, "http://b.test/1")} {
		if err := h.f.AcceptReady(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.run(1, nil); err != nil {
		t.Fatal(err)
	}
	if p := h.pages(); len(p) != 1 || len(r.sent) != 1 || r.sent[0].Gen != 2 {
		t.Fatalf("first run: fetched %v, forwarded %v; want a.test/1 fetched, b.test/1 forwarded at generation 2", p, r.sent)
	}
	keys := h.f.HandoverKeys()
	want := []HandoverKey{{Key: "http://a.test", Host: "a.test", Addr: addrA, Gen: 3},
		{Key: "http://b.test", Host: "b.test", Addr: addrB, Gen: 2, MovedTo: "b"}}
	if len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Fatalf("hand-over keys %+v, want %+v", keys, want)
	}

	r2 := newHandoverRouter(addrB)
	h2 := newHarness(t, Config{Resolver: res, Router: r2, Handovers: keys})
	for _, rec := range [][]byte{ho(2, addrB, "http://a.test/2"), AppendRecord(nil, Meta{}, "http://b.test/2")} {
		if err := h2.f.AcceptReady(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := h2.run(1, nil); err != nil {
		t.Fatal(err)
	}
	if p := h2.pages(); len(p) != 1 || p[0] != "http://a.test/2" {
		t.Errorf("restarted: fetched %v, want only a.test/2", p)
	}
	for _, rec := range h2.log {
		if !rec.robots && rec.addr != addrA {
			t.Errorf("%s fetched from %s, want %s (the address it was held at)", rec.url, rec.addr, addrA)
		}
	}
	if len(r2.sent) != 1 || r2.sent[0].Gen != 2 || r2.sent[0].Addr != addrB {
		t.Errorf("restarted: forwarded %+v, want b.test/2 to b at generation 2, address %s", r2.sent, addrB)
	}
	if got := h2.f.HandoverKeys(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("restarted: hand-over keys %+v, want %+v", got, want)
	}
}
