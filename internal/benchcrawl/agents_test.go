package benchcrawl

import (
	"math"
	"net/netip"
	"testing"
)

func TestParseLinkShare(t *testing.T) {
	v, ok := parseLinkShare("testweb: 2000 hosts on 500 addresses, cross-host links 33.8 % of 123456; hosts file /w/hosts, seeds /w/seeds.txt; Ctrl-C stops")
	if !ok || math.Abs(v-0.338) > 1e-9 {
		t.Errorf("got %v, %v", v, ok)
	}
	if _, ok := parseLinkShare("testweb: 8 hosts on 2 addresses; hosts file h"); ok {
		t.Error("a line without the share parsed")
	}
}

func TestAgentsShapes(t *testing.T) {
	if perAgent(60000, 3) != 20000 || perAgent(5000, 3) != 1667 || perAgent(0, 3) != 0 {
		t.Error("perAgent")
	}
	b := agentBinds(netip.MustParseAddr("127.216.0.254"), 3)
	if b[0] != "127.216.0.254:7946" || b[2] != "127.216.1.0:7946" {
		t.Errorf("binds %v", b)
	}
	s := sumSeries([]procResult{
		{series: []Sample{{1, 10}, {2, 20}, {2.5, 25}}},
		{series: []Sample{{1.1, 5}, {2.9, 9}}},
	})
	want := []Sample{{1.1, 15}, {2.9, 29}, {2.5, 34}}
	for i := range want {
		if s[i] != want[i] {
			t.Fatalf("sumSeries = %v, want %v", s, want)
		}
	}
	ex := map[string]int64{"ClusterSent": 30, "ClusterReadySent": 10, "ClusterReceived": 30, "ClusterForwarded": 2}
	if v := exchangedPerPage(ex, 10); v != 4.2 {
		t.Errorf("exchangedPerPage = %v", v)
	}
}

func TestSummarizeAgents(t *testing.T) {
	n := 3
	runs := []RunResult{
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 50, CPUPer1000: 0.30},
		{Crawler: agentsName(n), Pages: 100, PagesPerSec: 40, CPUPer1000: 0.33, URLsExchangedPerPage: 5},
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 60, CPUPer1000: 0.32},
		{Crawler: agentsName(n), Pages: 100, PagesPerSec: 45, CPUPer1000: 0.32, URLsExchangedPerPage: 6},
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 55, CPUPer1000: 0.31},
		{Crawler: agentsName(n), Pages: 100, PagesPerSec: 42, CPUPer1000: 0.36, URLsExchangedPerPage: 7},
	}
	s := summarizeAgents(runs, n, 0.34)
	if s.Rounds != 3 || s.SinglePagesPerSec != 55 || s.AgentsPagesPerSec != 42 || s.URLsExchangedPerPage != 6 {
		t.Errorf("summary %+v", s)
	}
	if math.Abs(s.Overhead-0.33/0.31) > 1e-9 || math.Abs(s.Paired-1.1) > 1e-9 {
		t.Errorf("overhead %v, paired %v", s.Overhead, s.Paired)
	}
}
