package agent

import (
	"net/netip"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestReadyOwnerAllocationFree: the owner of a ready URL whose host is
// placed already is the owner of the host's address, found without
// allocating (it is asked for every URL the sieve finds new), for a plain
// record and a hand-over record alike.
func TestReadyOwnerAllocationFree(t *testing.T) {
	v, err := cluster.NewView(1, []cluster.ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	host, err := frontier.ParseAssign("host")
	if err != nil {
		t.Fatal(err)
	}
	r := &clusterRouter{a: &Agent{}, host: host, placed: cluster.NewPlacements(0)}
	r.a.cfg.Cluster.Agent = "b"
	r.early.saved = v
	var recs [][]byte
	for i := range 64 {
		h := "h" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".petrel.test"
		addr := netip.AddrFrom4([4]byte{127, 7, 0, byte(i)})
		r.placed.Keep(h, addr)
		rec := frontier.AppendRecord(nil, frontier.Meta{}, "https://"+h+":8443/p/"+h+"?q=1")
		if got, want := r.ReadyOwner(rec), r.addrPeer(v, addr); got != want {
			t.Fatalf("%s: ReadyOwner %q, owner of its address %s %q", h, got, addr, want)
		}
		recs = append(recs, rec)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() { _ = r.ReadyOwner(recs[i%len(recs)]); i++ }); n != 0 {
		t.Errorf("ReadyOwner of a placed host allocates %.1f times a URL", n)
	}
	ho := frontier.AppendHandover(nil, frontier.Handover{Gen: 3, Addr: netip.MustParseAddr("127.7.1.1")}, recs[0])
	if n := testing.AllocsPerRun(1000, func() { _ = r.ReadyOwner(ho) }); n != 0 {
		t.Errorf("ReadyOwner of a hand-over record allocates %.1f times", n)
	}
}
