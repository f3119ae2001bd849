package benchetcd

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

// TestRunSeesEveryViewChange simulates 5 agents for 2 s against an
// embedded member in this process: writes are counted, etcd's revision
// grows, and every agent reads every view written in the window (two
// leaves and returns are asked; at least one completes in it).
func TestRunSeesEveryViewChange(t *testing.T) {
	k, err := cluster.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Authority(k)
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr("127.0.0.1")
	port, err := FreePortPair(ip)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := StartMember(ctx, a, netip.AddrPortFrom(ip, port), t.TempDir(), func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	target := Target{Endpoints: []string{"https://" + netip.AddrPortFrom(ip, port).String()}, Authority: a}
	o := Options{Agents: 5, Duration: 2 * time.Second, PublishEvery: 200 * time.Millisecond, ViewEvery: time.Second,
		TTL: 2 * time.Second, Settle: 100 * time.Millisecond, Grace: 5 * time.Second, Log: func(s string) { t.Log(s) }}
	res, err := Run(ctx, o, target)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	res.WriteTable(&table)
	t.Log("\n" + table.String())
	v := res.Views
	if v.LeavesAsked != 2 || v.Returns < 1 || v.Written < 2 {
		t.Errorf("views: %d leaves asked, %d returns, %d written; want 2, ≥ 1, ≥ 2", v.LeavesAsked, v.Returns, v.Written)
	}
	if v.Missed != 0 || v.Reads.Count != v.Written*o.Agents || v.AllRead.Count != v.Written {
		t.Errorf("views: %d reads of %d views by %d agents, %d missed, %d read by all", v.Reads.Count, v.Written, o.Agents, v.Missed, v.AllRead.Count)
	}
	if res.Issued.Puts == 0 || res.Issued.Txns == 0 || res.WritesPerSecond <= 0 || res.RevisionsPerSecond <= 0 || res.KeepAlivesPerSecond <= 0 {
		t.Errorf("issued %+v, %.1f writes/s, %.1f revisions/s, %.1f keep-alives/s: want all counted", res.Issued, res.WritesPerSecond, res.RevisionsPerSecond, res.KeepAlivesPerSecond)
	}
	// Every Publish is a put; each agent makes about 10 in the window
	// (the two counts may differ by the few made across its ends).
	if res.Publish.Count < 20 || res.Publish.Errors != 0 || int64(res.Publish.Count) > res.Issued.Puts+int64(o.Agents) {
		t.Errorf("Publish: %+v against %d puts", res.Publish, res.Issued.Puts)
	}
	if res.LeasesLost != 0 || len(res.Errors) != 0 || res.DBSize == 0 {
		t.Errorf("leases lost %d, errors %q, db %d bytes", res.LeasesLost, res.Errors, res.DBSize)
	}
	if res.CoordinatorMeasured {
		t.Error("an in-process coordinator is reported as measured")
	}
}

// TestProcFigures reads this process's CPU and memory as the benchmark
// reads the coordinator's.
func TestProcFigures(t *testing.T) {
	cpu, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	rss, peak, err := procMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss || cpu < 0 {
		t.Errorf("cpu %s, rss %d, peak %d", cpu, rss, peak)
	}
}
