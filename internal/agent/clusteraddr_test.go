package agent

import (
	"net/netip"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestAddrPeer checks that the owner of an address, spelt in a buffer, is
// the owner of its group as the hand-offs spell it (ipGroup), with no
// allocation.
func TestAddrPeer(t *testing.T) {
	v, err := cluster.NewView(1, []cluster.ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c", Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	r := &clusterRouter{a: &Agent{}}
	r.a.cfg.Cluster.Agent = "b"
	addrs := []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("2001:db8::ff00:42:8329")}
	for i := range 2000 {
		addrs = append(addrs, netip.AddrFrom4([4]byte{127, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	for _, a := range addrs {
		want := r.peer(v.Owner(ipGroup(a)))
		if got := r.addrPeer(v, a); got != want {
			t.Fatalf("%s: addrPeer %q, owner of %q %q", a, got, ipGroup(a), want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.addrPeer(v, addrs[5]) }); n != 0 {
		t.Errorf("addrPeer allocates %.0f times", n)
	}
	if r.addrPeer(v, addrs[0]) == frontier.Peer("b") {
		t.Error("this agent's own addresses must be Self")
	}
}
