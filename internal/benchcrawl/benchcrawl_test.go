package benchcrawl

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		line string
		n    int64
		ok   bool
	}{
		{"pages 19192 (1441/s) 21.6 MiB/s | known 138747 ready 0", 19192, true},
		{"pages 0 (0/s)", 0, true},
		{"crawl finished in 19.259s", 0, false},
		{"  pages fetched      30000 (1557.7/s)", 0, false},
		{"", 0, false},
	} {
		n, ok := parseProgress(tc.line)
		if n != tc.n || ok != tc.ok {
			t.Errorf("parseProgress(%q) = %d, %v; want %d, %v", tc.line, n, ok, tc.n, tc.ok)
		}
	}
}

func TestParseFinished(t *testing.T) {
	for _, tc := range []struct {
		line string
		d    time.Duration
		ok   bool
	}{
		{"crawl finished in 19.259s", 19259 * time.Millisecond, true},
		{"crawl finished in 1m2.5s", 62500 * time.Millisecond, true},
		{"crawl finished in 19.259s: --max-urls 60000 reached", 19259 * time.Millisecond, true},
		{"crawl finished in soon", 0, false},
		{"pages 1 (1/s)", 0, false},
	} {
		d, ok := parseFinished(tc.line)
		if d != tc.d || ok != tc.ok {
			t.Errorf("parseFinished(%q) = %v, %v; want %v, %v", tc.line, d, ok, tc.d, tc.ok)
		}
	}
}

func TestClassifyWget(t *testing.T) {
	for _, tc := range []struct {
		line string
		want wgetKind
	}{
		{`2026-11-30 04:07:09 URL:http://h000.petrel.test:8080/ [20580/20580] -> "/tmp/gw/h000.petrel.test:8080/index.html" [1]`, wgetPage},
		{`2026-11-30 04:07:09 URL:http://h001.petrel.test:8080/robots.txt [144/144] -> "/tmp/gw/h001.petrel.test:8080/robots.txt" [1]`, wgetRobots},
		{`2026-11-30 04:07:10 ERROR 404: Not Found.`, wgetError},
		{`http://h001.petrel.test:8080/missing.html:`, wgetOther},
		{`FINISHED --2026-11-30 04:07:30--`, wgetOther},
		{`Downloaded: 12 files, 240K in 0.01s (20 MB/s)`, wgetOther},
	} {
		if got := classifyWget(tc.line); got != tc.want {
			t.Errorf("classifyWget(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}

func TestWrkRate(t *testing.T) {
	out := `Running 5s test @ http://127.90.0.1:8080/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.20ms    0.50ms   9.00ms   80.00%
  25000 requests in 5.00s, 500.00MB read
  Non-2xx or 3xx responses: 12
Requests/sec:   5000.25
Transfer/sec:    100.00MB
`
	for _, tc := range []struct {
		name    string
		out     string
		rate    float64
		non2xx  int64
		wantErr bool
	}{
		{"full", out, 5000.25, 12, false},
		{"no non-2xx line", "Requests/sec: 10.5\n", 10.5, 0, false},
		{"empty", "", 0, 0, true},
		{"garbled", "Requests/sec: lots\n", 0, 0, true},
	} {
		rate, n, err := wrkRate(tc.out)
		if (err != nil) != tc.wantErr || rate != tc.rate || n != tc.non2xx {
			t.Errorf("%s: wrkRate = %v, %d, %v; want %v, %d, err %v", tc.name, rate, n, err, tc.rate, tc.non2xx, tc.wantErr)
		}
	}
}

func TestAllowedRate(t *testing.T) {
	hosts := "127.0.0.1 a.test\n127.0.0.1 b.test\n127.0.0.1 c.test\n127.0.0.1 d.test\n" +
		"127.0.0.2 e.test\n# comment\n127.0.0.3 f.test g.test\n"
	h, err := parseHosts(strings.NewReader(hosts))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.addrs) != 3 || len(h.ipOf) != 7 {
		t.Fatalf("parseHosts: %d addresses, %d names; want 3, 7", len(h.addrs), len(h.ipOf))
	}
	for _, tc := range []struct {
		name     string
		host, ip time.Duration
		want     float64
	}{
		// 4 hosts: min(1/1, 4/2)=1; 1 host: min(1, 1/2)=0.5; 2 hosts: min(1, 2/2)=1.
		{"politeness-bound 2s/1s", 2 * time.Second, time.Second, 2.5},
		// min(100, 40)=40; min(100, 10)=10; min(100, 20)=20.
		{"headline 100ms/10ms", 100 * time.Millisecond, 10 * time.Millisecond, 70},
		{"host delay only", time.Second, 0, 7},
		{"IP delay only", 0, 500 * time.Millisecond, 6},
		{"no delay", 0, 0, math.Inf(1)},
	} {
		if got := allowedRate(h, tc.host, tc.ip); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
			t.Errorf("%s: allowedRate = %v, want %v", tc.name, got, tc.want)
		}
	}
	seeds := []string{"http://a.test:8080/", "http://E.test/", "http://unknown.test:1/", "::bad"}
	ports := portsByAddr(h, seeds)
	if len(ports) != 2 || ports["127.0.0.1"] != "8080" || ports["127.0.0.2"] != "80" {
		t.Errorf("portsByAddr = %v", ports)
	}
}

func TestCountWARCRecords(t *testing.T) {
	rec := func(typ, uri, body string) string {
		return "WARC/1.1\r\nWARC-Type: " + typ + "\r\nWARC-Target-URI: " + uri + "\r\nContent-Length: 3\r\n\r\n" + body + "\r\n\r\n"
	}
	long := strings.Repeat("x", 100<<10) + "\n"
	for _, tc := range []struct {
		name string
		in   string
		want int64
	}{
		{"empty", "", 0},
		{"one page", rec("response", "http://a.test/", "abc"), 1},
		{"robots not a page", rec("response", "http://a.test/robots.txt", "abc") + rec("response", "http://a.test/p/1.html", "abc"), 1},
		{"request and warcinfo skipped", rec("warcinfo", "", "abc") + rec("request", "http://a.test/", "abc") + rec("revisit", "<http://a.test/x>", "abc"), 1},
		{"long body line", rec("response", "http://a.test/", long) + rec("response", "http://b.test/", "abc"), 2},
		{"body mentioning headers", rec("response", "http://a.test/", "WARC-Type: response\r\n"), 1},
	} {
		n, err := countWARCRecords(strings.NewReader(tc.in))
		if err != nil || n != tc.want {
			t.Errorf("%s: countWARCRecords = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
}

func TestSteadyRate(t *testing.T) {
	lin := func(n int, rate float64) []Sample {
		var s []Sample
		for i := 1; i <= n; i++ {
			s = append(s, Sample{T: float64(i), Pages: int64(rate * float64(i))})
		}
		return s
	}
	ramp := append([]Sample{{T: 1, Pages: 0}, {T: 2, Pages: 0}}, Sample{T: 3, Pages: 10})
	for i := 4; i <= 12; i++ {
		ramp = append(ramp, Sample{T: float64(i), Pages: 10 + int64(i-3)*100})
	}
	for _, tc := range []struct {
		name   string
		s      []Sample
		cutoff float64
		want   float64
	}{
		{"steady", lin(20, 50), 0, 50},
		{"ramp excluded", ramp, 0, 100},
		{"tail after cutoff excluded", append(lin(20, 50), Sample{T: 40, Pages: 1000}), 20, 50},
		{"too few", lin(2, 50), 0, 0},
	} {
		if got := steadyRate(tc.s, tc.cutoff); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: steadyRate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		n    int
		want float64
	}{
		{100, 10, 10}, {95, 6, 20}, {5000, 6, 1000}, {0.7, 7, 0.1}, {0, 5, 1}, {33, 8, 5},
	} {
		if got := niceStep(tc.max, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("niceStep(%v, %d) = %v, want %v", tc.max, tc.n, got, tc.want)
		}
	}
}

func TestRates(t *testing.T) {
	got := rates([]Sample{{T: 1, Pages: 0}, {T: 2, Pages: 100}, {T: 2, Pages: 100}, {T: 4, Pages: 300}})
	want := [][2]float64{{2, 100}, {4, 100}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("rates = %v, want %v", got, want)
	}
}

func TestWritePlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series []plotSeries
		lines  []hLine
		want   []string
	}{
		{"empty", nil, nil, []string{"pages/s", "seconds since"}},
		{"crawlers and limit", []plotSeries{
			{name: "petrel", pts: [][2]float64{{1, 1500}, {2, 1700}}},
			{name: "colly <&>", pts: [][2]float64{{1, 700}}},
		}, []hLine{{name: "web limit (wrk)", value: 9000}}, []string{"petrel (mean 1600/s)", "colly &lt;&amp;&gt;", "web limit (wrk) 9000/s", "<polyline"}},
	} {
		var b bytes.Buffer
		if err := writePlot(&b, "title & co", tc.series, tc.lines); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: not well-formed XML: %v", tc.name, err)
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: SVG lacks %q", tc.name, w)
			}
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"7684 (cat) R 7681 7681 24335 0 -1 4194304 125 0 0 0 150 25 0 0 20 0 1 0", 1750 * time.Millisecond, false},
		{"1 (a) b) S 0 1 1 0 -1 0 0 0 0 0 3 4 0 0", 70 * time.Millisecond, false},
		{"garbage", 0, true},
		{"1 (x) S 1 2", 0, true},
	} {
		got, err := parseProcStatCPU(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("parseProcStatCPU(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{fn: func(s string) { got = append(got, s) }}
	for _, p := range []string{"pages 1 (1/s)\npag", "es 2 (2/s)\r\n", "tail"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	want := []string{"pages 1 (1/s)", "pages 2 (2/s)", "tail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q", got, want)
	}
	// An endless line is cut at maxLine, and the tail is bounded.
	big := &lineWriter{}
	big.Write(bytes.Repeat([]byte("x"), 3*maxLine))
	big.Write([]byte("\n"))
	for i := 0; i < 2*tailLines; i++ {
		big.Write([]byte("l\n"))
	}
	if len(big.lines()) != tailLines {
		t.Errorf("tail holds %d lines, want %d", len(big.lines()), tailLines)
	}
	if len(big.buf) != 0 {
		t.Errorf("buffer not reset")
	}
}

func TestLimitScript(t *testing.T) {
	s := limitScript([]string{"a.test:8080", "b.test:8080"}, []string{"/", "/p/1.html"})
	for _, w := range []string{`"a.test:8080", "b.test:8080"`, `"/", "/p/1.html"`, "wrk.format(\"GET\", p"} {
		if !strings.Contains(s, w) {
			t.Errorf("script lacks %q:\n%s", w, s)
		}
	}
	if got := pickSpread([]string{"a", "b", "c", "d", "e", "f"}, 3); strings.Join(got, "") != "ace" {
		t.Errorf("pickSpread = %v", got)
	}
}

func TestRunMeasured(t *testing.T) {
	// A child that prints progress and ignores nothing: stopped at the bound by SIGINT.
	script := `i=0; while true; do i=$((i+10)); echo "pages $i (10/s)" >&2; sleep 0.05; done`
	res := runMeasured(context.Background(), procSpec{
		name: "sh", args: []string{"-c", script}, bound: 600 * time.Millisecond, every: 100 * time.Millisecond,
		stop: syscall.SIGINT,
		onLine: func(l string, p *atomic.Int64) {
			if n, ok := parseProgress(l); ok {
				p.Store(n)
			}
		},
	})
	if !res.stopped || res.err != nil {
		t.Fatalf("stopped %v, err %v", res.stopped, res.err)
	}
	if res.pages < 30 || len(res.series) < 3 || res.maxRSS <= 0 {
		t.Errorf("pages %d, %d samples, max RSS %d", res.pages, len(res.series), res.maxRSS)
	}
	res = runMeasured(context.Background(), procSpec{name: "sh", args: []string{"-c", "echo oops >&2; exit 3"},
		bound: 5 * time.Second, every: time.Second, stop: syscall.SIGINT})
	if res.err == nil || res.stopped || !strings.Contains(res.err.Error(), "oops") {
		t.Errorf("failing child: err %v, stopped %v", res.err, res.stopped)
	}
}

// TestNamespace checks that wget's namespace resolves names from the hosts
// file only: no packet reaches the decoy name server.
func TestNamespace(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare")
	}
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.205.0.1 present.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareNamespace(context.Background(), unshare, hosts, "present.test", dir); err != nil {
		t.Fatalf("namespace check failed: %v", err)
	}
	// A name that is absent must make the check fail, not hang.
	if _, err := prepareNamespace(context.Background(), unshare, hosts, "absent.test", dir); err == nil {
		t.Error("check passed with a name missing from the hosts file")
	}
}

// TestRunTiny runs the whole harness on a tiny web: Petrel and Colly.
func TestMedianRuns(t *testing.T) {
	run := func(c string, pps float64) RunResult { return RunResult{Crawler: c, PagesPerSec: pps} }
	skipped := RunResult{Crawler: "wget", Skipped: "no wget"}
	for _, tc := range []struct {
		name string
		all  []RunResult
		want []RunResult
	}{
		{"one round", []RunResult{run("petrel", 5), run("colly", 1)}, []RunResult{run("petrel", 5), run("colly", 1)}},
		{"three rounds", []RunResult{run("petrel", 5), run("colly", 1), run("petrel", 4), run("colly", 3), run("petrel", 6), run("colly", 2)},
			[]RunResult{run("petrel", 5), run("colly", 2)}},
		{"two rounds: the lower middle", []RunResult{run("petrel", 5), run("petrel", 4)}, []RunResult{run("petrel", 4)}},
		{"skipped runs do not count", []RunResult{run("petrel", 5), skipped, run("petrel", 3), run("wget", 2), run("petrel", 4), skipped},
			[]RunResult{run("petrel", 4), run("wget", 2)}},
		{"always skipped", []RunResult{run("petrel", 5), skipped, skipped}, []RunResult{run("petrel", 5), skipped}},
	} {
		got := medianRuns(tc.all)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d runs, want %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if got[i].Crawler != tc.want[i].Crawler || got[i].PagesPerSec != tc.want[i].PagesPerSec || got[i].Skipped != tc.want[i].Skipped {
				t.Errorf("%s: run %d = %s %v, want %s %v", tc.name, i, got[i].Crawler, got[i].PagesPerSec, tc.want[i].Crawler, tc.want[i].PagesPerSec)
			}
		}
	}
}

func TestRunTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds petrel and the Colly crawler and runs two crawls")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	petrel := filepath.Join(dir, "petrel")
	build := exec.Command(goCmd, "build", "-o", petrel, "./cmd/petrel")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build petrel: %v\n%s", err, out)
	}
	var js, table bytes.Buffer
	plot := filepath.Join(dir, "crawl.svg")
	o := Options{
		Petrel: petrel, WorkDir: filepath.Join(dir, "work"), CollySource: filepath.Join("..", "..", "bench", "colly"),
		Hosts: 8, HostsPerIP: 4, PagesPerHost: 6, LinksPerPage: 8, PageBytes: 2048,
		Port: -1, HostDelay: 20 * time.Millisecond, IPDelay: 5 * time.Millisecond,
		Peers: []string{PeerPetrel, PeerColly}, TimeBound: 30 * time.Second, Progress: 200 * time.Millisecond,
		Plot: plot, Repeat: 2,
	}
	o.FirstIP = netip.MustParseAddr("127.206.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, o, &js, &table); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Crawler != PeerPetrel || rep.Runs[1].Crawler != PeerColly {
		t.Fatalf("runs: %+v", rep.Runs)
	}
	// Two rounds: petrel, colly, petrel, colly; the median of two is the
	// slower run.
	if len(rep.Repeats) != 4 || rep.Repeats[0].Crawler != PeerPetrel || rep.Repeats[1].Crawler != PeerColly ||
		rep.Repeats[2].Crawler != PeerPetrel || rep.Repeats[3].Crawler != PeerColly {
		t.Fatalf("repeats: %+v", rep.Repeats)
	}
	if want := min(rep.Repeats[0].PagesPerSec, rep.Repeats[2].PagesPerSec); rep.Runs[0].PagesPerSec != want {
		t.Errorf("petrel's median run: %v pages/s, want %v", rep.Runs[0].PagesPerSec, want)
	}
	if p := rep.Runs[0]; p.SelfReportedS <= 0 || p.ElapsedS < p.SelfReportedS {
		t.Errorf("petrel: elapsed %v s (exec to exit) against its own %v s", p.ElapsedS, p.SelfReportedS)
	}
	if !strings.Contains(table.String(), "every run") {
		t.Errorf("table lists no runs:\n%s", table.String())
	}
	for _, r := range rep.Runs {
		if r.Skipped != "" || r.Error != "" {
			t.Errorf("%s: skipped %q, error %q", r.Crawler, r.Skipped, r.Error)
		}
		if r.Pages < 8 || r.PagesPerSec <= 0 || r.CPUSeconds <= 0 || r.PeakRSSBytes <= 0 || r.StoppedAtBound {
			t.Errorf("%s: implausible figures %+v", r.Crawler, r)
		}
	}
	p := rep.Runs[0]
	if p.PagesChecked != p.Pages {
		t.Errorf("petrel: %d pages in WARC, %d in stats", p.PagesChecked, p.Pages)
	}
	if p.AllocsPerPage <= 0 || p.BytesWritten <= 0 || p.RatioPagesPerSec != 1 {
		t.Errorf("petrel: allocs/page %v, written %d, ratio %v", p.AllocsPerPage, p.BytesWritten, p.RatioPagesPerSec)
	}
	if rep.Runs[1].RatioCPUPer1000 <= 0 {
		t.Errorf("colly: no ratio to petrel")
	}
	if !strings.Contains(table.String(), "petrel") || !strings.Contains(table.String(), "colly") {
		t.Errorf("table:\n%s", table.String())
	}
	if b, err := os.ReadFile(plot); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("plot: %v", err)
	}
}
