package benchscale

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseProcStatus(t *testing.T) {
	rss, peak, err := parseProcStatus("Name:\tpetrel\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads: 9\n")
	if err != nil || rss != 100<<20 || peak != 200<<20 {
		t.Fatalf("got %d %d %v", rss, peak, err)
	}
	if _, _, err := parseProcStatus("Name: x\n"); err == nil {
		t.Error("no error without VmRSS")
	}
}

func TestRateBetween(t *testing.T) {
	ss := []Sample{{T: 10, Pages: 100}, {T: 20, Pages: 300}, {T: 30, Pages: 400}}
	if r := rateBetween(ss, 10, 20); r != 20 {
		t.Errorf("rate 10..20 = %v, want 20", r)
	}
	if r := rateBetween(ss, 15, 25); r != 15 {
		t.Errorf("rate 15..25 = %v, want 15 (interpolated 200 → 350)", r)
	}
	if r := rateBetween(ss, 0, 10); r != 10 {
		t.Errorf("rate 0..10 = %v, want 10 (from 0 pages at 0 s)", r)
	}
}

func TestDiskUsageCountsLinksOnce(t *testing.T) {
	d := t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), bytes.Repeat([]byte{'x'}, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("state/sieve/b000-1.sv", 40000)
	write("state/sieve/aux-1", 8192)
	write("state/ready/1.dq", 8192)
	write("warc/a.warc.gz", 16384)
	write("logs/crawl.log", 4096)
	if err := os.MkdirAll(filepath.Join(d, "state/checkpoints/cp-1/sieve"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(d, "state/sieve/b000-1.sv"), filepath.Join(d, "state/checkpoints/cp-1/sieve/b000-1.sv")); err != nil {
		t.Fatal(err)
	}
	u := diskUsage(d)
	if u.SieveStore < 40000 || u.SieveBuffers < 8192 || u.Ready < 8192 || u.WARC < 16384 || u.Other < 4096 {
		t.Errorf("usage %+v", u)
	}
	if u.Checkpoints != 0 {
		t.Errorf("a hard-linked sieve file counted again in checkpoints: %+v", u)
	}
}

// TestScaleSmoke runs the benchmark to 3·10⁵ known URLs against a petrel
// built without the race detector, and checks the report: N reached, a
// checkpoint at N, a clean stop, a loose memory bound, the frontier's disk
// per known URL.
func TestScaleSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds petrel and crawls for about half a minute (minutes on a loaded machine)")
	}
	bin := filepath.Join(t.TempDir(), "petrel")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/petrel")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build petrel: %v\n%s", err, out)
	}
	const n = 300_000
	var js, table bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	err := Run(ctx, Options{Known: n, Petrel: bin, WorkDir: t.TempDir(), Port: -1, Addrs: 256,
		FirstIP: netip.MustParseAddr("127.130.0.1"), Every: time.Second, TimeBound: 4 * time.Minute, Log: discard}, &js, &table)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	var rep struct {
		Samples []map[string]any `json:"samples"`
		Summary map[string]any   `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"t_s", "pages", "known", "queued_ram", "queued_disk", "rss_bytes", "heap_bytes", "disk_bytes", "pages_per_s", "cpu_s"} {
		if _, ok := rep.Samples[len(rep.Samples)-1][k]; !ok {
			t.Errorf("sample has no %q", k)
		}
	}
	for _, k := range []string{"known", "pages", "wall_s", "peak_rss_bytes", "disk_bytes_per_known", "rate_second_tenth", "rate_last_tenth", "checkpoint_pause_s"} {
		if _, ok := rep.Summary[k]; !ok {
			t.Errorf("summary has no %q", k)
		}
	}
	s := rep.Summary
	num := func(k string) float64 { v, _ := s[k].(float64); return v }
	if s["reached"] != true || num("known") < n {
		t.Fatalf("N not reached: %v", s)
	}
	if num("pages") <= 0 || num("rate_second_tenth") <= 0 || num("rate_last_tenth") <= 0 {
		t.Errorf("no rates: %v", s)
	}
	if peak := num("peak_rss_bytes"); peak <= 0 || peak > 1.5*(1<<30) {
		t.Errorf("peak RSS %.0f MiB, want (0, 1536]", peak/(1<<20))
	}
	// At 3·10⁵ known the frontier's disk is dominated by what does not grow
	// with the crawl (the sieve's buffer files) and by a ready queue still
	// holding most known URLs, how many depending on when N is crossed (318
	// and 708 B per known URL seen in two runs of one build): only its
	// presence is checked here; the per-URL target is the benchmark's.
	if d := num("disk_bytes_per_known"); d <= 8 {
		t.Errorf("frontier disk %.1f B per known URL, want > 8", d)
	}
	cps, _ := s["checkpoints"].([]any)
	atN := false
	for _, c := range cps {
		if m, _ := c.(map[string]any); m["at_n"] == true {
			atN = true
		}
	}
	if !atN || num("stop_s") <= 0 {
		t.Errorf("no checkpoint at N or no clean stop: checkpoints %v, stop %v", cps, s["stop_s"])
	}
	if !strings.Contains(table.String(), "B per known URL") {
		t.Error("table has no summary")
	}
}
