package coord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap/netcaptest"
)

// fill opens idle connections to f until it holds its cap.
func fill(t *testing.T, f *front) {
	t.Helper()
	netcaptest.Flood(t, f.ln.Addr().String(), f.ln.Max()-f.ln.Open())
	deadline := time.Now().Add(2 * time.Second)
	for f.ln.Open() < f.ln.Max() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections accepted", f.ln.Open(), f.ln.Max())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMemberPortsRefusePastTheirCaps: a member of three whose client and
// peer ports each hold their cap of idle connections closes the ones
// past it at once, counts and logs them, and etcd goes on: a put and a
// get through a client dialed before succeed, the three members agreeing.
func TestMemberPortsRefusePastTheirCaps(t *testing.T) {
	a := testAuthority(t, 7)
	var logs netcaptest.Log
	ms, cs := startMembersWith(t, a, 3, func(mc *MemberConfig) {
		mc.Logger = logs.Logger()
		mc.MaxClientConns, mc.MaxPeerConns = 16, 32
	})
	cli := dial(t, a, cs)
	put := func(what, v string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Put(ctx, "k", v); err != nil {
			t.Fatalf("put %s: %v", what, err)
		}
	}
	put("before the flood", "0")
	m := ms[0]
	const extra = 20
	for _, f := range []*front{m.client, m.peer} {
		fill(t, f)
		netcaptest.Refused(t, netcaptest.Flood(t, f.ln.Addr().String(), extra))
	}
	if client, peer := m.ConnsRefused(); client < extra || peer < extra {
		t.Errorf("ConnsRefused() = %d, %d; want at least %d each", client, peer, extra)
	}
	for _, port := range []string{"client", "peer"} {
		if !strings.Contains(logs.String(), "coord: etcd "+port+" port: refused a connection: too many connections open") {
			t.Errorf("no refusal of the %s port logged:\n%s", port, logs.String())
		}
	}
	for i := range 3 {
		put("with both ports of "+cs[0].Name+" full", strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "2" {
		t.Fatalf("get with both ports of %s full: %v %v", cs[0].Name, resp, err)
	}
}
