package benchcrawl

import (
	"math"
	"testing"
)

// TestSummarizeOps checks the on ÷ off medians and the rounds' own
// ratios; a skipped run and other crawlers are left out.
func TestSummarizeOps(t *testing.T) {
	runs := []RunResult{
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 50, CPUPer1000: 0.30},
		{Crawler: opsName, Pages: 100, PagesPerSec: 45, CPUPer1000: 0.33},
		{Crawler: PeerColly, Pages: 100, PagesPerSec: 10, CPUPer1000: 9},
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 60, CPUPer1000: 0.32},
		{Crawler: opsName, Pages: 100, PagesPerSec: 60, CPUPer1000: 0.32},
		{Crawler: PeerPetrel, Pages: 100, PagesPerSec: 55, CPUPer1000: 0.31},
		{Crawler: opsName, Pages: 100, PagesPerSec: 44, CPUPer1000: 0.341},
		{Crawler: opsName, Skipped: "no", CPUPer1000: 99},
	}
	s := summarizeOps(runs)
	if s.Rounds != 3 || s.OffPagesPerSec != 55 || s.OnPagesPerSec != 45 || s.OffCPUPer1000 != 0.31 || s.OnCPUPer1000 != 0.33 {
		t.Errorf("summary %+v", s)
	}
	if math.Abs(s.Overhead-0.33/0.31) > 1e-9 || math.Abs(s.Paired-1.1) > 1e-9 || math.Abs(s.RatePaired-0.9) > 1e-9 || s.Target != 1.03 {
		t.Errorf("overhead %v, paired %v, rate %v, target %v", s.Overhead, s.Paired, s.RatePaired, s.Target)
	}
	if consoleLine.FindStringSubmatch("petrel: console at http://127.0.0.1:41234/ (one-time login link: http://127.0.0.1:41234/#code=ab)")[1] != "http://127.0.0.1:41234" {
		t.Error("the console line is not recognised")
	}
}
