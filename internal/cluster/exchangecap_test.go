package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap/netcaptest"
)

// TestExchangeRefusesPastItsCap: an exchange that holds MaxExchangeConns
// idle connections closes the ones past it at once, counts and logs
// them, and still takes the batches of a peer connected before.
func TestExchangeRefusesPastItsCap(t *testing.T) {
	t.Parallel() // waits on leases and views more than it computes
	ha, hb := newTestHost(), newTestHost()
	var logs netcaptest.Log
	a := mustNode(t, "a", nil, 2, ha)
	b, err := startNode(t, "b", testKey, []string{a.cfg.Bind.String()}, 2, hb, [][2]string{{"assign", "authority"}}, func(c *Config) {
		c.Logger = logs.Logger()
	})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, a, b)
	deliver := func(what string, from int) {
		t.Helper()
		for i := from; i < from+10; i++ {
			if err := a.Route("b", KindURLs, fmt.Appendf(nil, "http://h.test/p%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for hb.count() < from+10 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: b applied %d records, want %d", what, hb.count(), from+10)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	deliver("before the flood", 0)
	addr := b.cfg.ExchangeAddr()
	netcaptest.Flood(t, addr, MaxExchangeConns-b.tr.(*httpTransport).ln.Open())
	deadline := time.Now().Add(3 * time.Second)
	for b.tr.(*httpTransport).ln.Open() < MaxExchangeConns {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted", b.tr.(*httpTransport).ln.Open(), MaxExchangeConns)
		}
		time.Sleep(time.Millisecond)
	}
	const extra = 20
	netcaptest.Refused(t, netcaptest.Flood(t, addr, extra))
	if n := b.ConnsRefused(); n != extra {
		t.Errorf("ConnsRefused() = %d, want %d", n, extra)
	}
	if !strings.Contains(logs.String(), "cluster: exchange: refused a connection: too many connections open") {
		t.Errorf("no refusal logged:\n%s", logs.String())
	}
	deliver("with b's exchange full", 10)
}
