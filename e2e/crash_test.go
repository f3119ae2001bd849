package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestCrashAndRecover kills the crawler with SIGKILL at ten points (inside
// a checkpoint, inside a sieve flush, and at random moments), restarting it
// each time on the same directory, then lets it finish. Every reachable page
// must be fetched, duplicates must stay within what a restore fetches
// again (the fetches in flight at the cut of each killed run's last
// checkpoint, and those begun after it), and every WARC file must read
// through.
func TestCrashAndRecover(t *testing.T) {
	const hostDelay, ipDelay = 60 * time.Millisecond, 10 * time.Millisecond
	r := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 3, PagesPerHost: 30, Seed: 5, FirstIP: netip.MustParseAddr("127.63.0.1")})
	args := []string{"crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", r.seeds, "--allow-private",
		"--system-dns=false", "--progress", "0", "--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(),
		"--retry-delay", "100ms", "--fetch-timeout", "5s", "--checkpoint-every", "150ms", "--sieve-buffer", "64", "--workbench-bytes", "4096"}
	type run struct {
		env   string
		after time.Duration
	}
	rng := rand.New(rand.NewSource(42))
	runs := []run{{env: "PETREL_CRASH_AT=checkpoint:2"}, {env: "PETREL_CRASH_AT=sieve-flush:3"}, {env: "PETREL_CRASH_AT=checkpoint:1"}}
	for len(runs) < 10 {
		runs = append(runs, run{after: time.Duration(150+rng.Intn(350)) * time.Millisecond})
	}
	var killedAt []time.Time
	recoveries := 0
	for i, rn := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, petrel, args...)
		cmd.Env = append(os.Environ(), rn.env)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if rn.env == "" {
			waitRunning(ctx, t, r.dir, cmd.Process.Pid)
			time.Sleep(rn.after)
			cmd.Process.Kill()
		}
		err := cmd.Wait()
		killedAt = append(killedAt, time.Now())
		cancel()
		if err == nil {
			t.Fatalf("run %d (%q) finished the crawl before it was killed; make the web bigger", i, rn.env)
		}
		if strings.Contains(stderr.String(), "did not stop cleanly") {
			recoveries++
		}
		if s := stderr.String(); strings.Contains(s, "panic") {
			t.Fatalf("run %d: %s", i, s)
		}
	}
	if err := r.crawl(t, 2*time.Minute, args[7:]...); err != nil {
		t.Fatalf("final run: %v\n%s", err, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "did not stop cleanly") {
		t.Errorf("the final run did not report a recovery:\n%s", r.stderr.String())
	}
	if recoveries < len(runs)/2 {
		t.Errorf("%d of %d restarted runs reported a recovery", recoveries, len(runs)-1)
	}

	expected := map[string]bool{}
	for _, u := range r.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	hits := r.web.Hits()
	seen := map[string]int{}
	dups := 0
	for _, h := range hits {
		if h.Path == "/robots.txt" {
			continue
		}
		k := key(h.Host, h.Path)
		if seen[k]++; seen[k] > 1 {
			dups++
		}
		if !expected[k] {
			t.Errorf("unexpected fetch of %s", k)
		}
	}
	for k := range expected {
		if seen[k] == 0 {
			t.Errorf("%s was never fetched: lost in a crash", k)
		}
	}
	// Bound: what a restore fetches again, by each killed run. With a
	// checkpoint of its own, the last one it logged (a later one it did not
	// log only fetches less again): the page tasks in flight or being
	// parsed at that checkpoint's cut, and the pages whose requests started
	// after the cut. Without one, every page it requested.
	cps, virtual := checkpointEvents(t, filepath.Join(r.dir, "logs", "events.jsonl"))
	if virtual == 0 {
		t.Error("no checkpoint held virtualized URLs: the test no longer covers their restore")
	}
	bound := 0
	runStart := time.Time{}
	for _, killed := range killedAt {
		cut, unfinished := runStart, 0
		for _, c := range cps {
			if c.logged.After(runStart) && c.logged.Before(killed) && c.taken.After(cut) {
				cut, unfinished = c.taken, c.unfinished
			}
		}
		bound += unfinished
		for _, h := range hits {
			if h.Path != "/robots.txt" && h.Start.After(cut) && h.Start.Before(killed) {
				bound++
			}
		}
		runStart = killed
	}
	t.Logf("%d page requests, %d repeated after crashes (bound %d), %d checkpoints", len(hits), dups, bound, len(cps))
	if dups > bound {
		t.Errorf("%d duplicate fetches, more than the %d a restore fetches again (in flight at the last checkpoints' cuts, or requested after them)", dups, bound)
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, "warc", "*"))
	for _, f := range files {
		if strings.HasSuffix(f, ".open") {
			t.Errorf("%s left open after a clean end", f)
			continue
		}
		if !strings.HasSuffix(f, ".warc.gz") {
			continue // the CDXJ index beside each WARC file
		}
		if _, err := store.CheckFile(f); err != nil {
			t.Errorf("WARC file unreadable after the crashes: %v", err)
		}
	}
}

// waitRunning waits until the crawl of process pid has marked dir as in
// use (state/RUNNING holds its pid), so that a kill timed from then falls in
// the crawl, not in the process's start, however loaded the machine; it
// returns early when ctx ends or the process writes no marker.
func waitRunning(ctx context.Context, t *testing.T, dir string, pid int) {
	want := strconv.Itoa(pid)
	for ctx.Err() == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "state", "RUNNING")); err == nil && strings.TrimSpace(string(b)) == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("process %d did not mark the directory as in use before its deadline", pid)
}

// checkpointEvent is a checkpoint as the event log tells it: when it was
// logged (complete), when its state was taken (its cut), and how many page
// tasks were in flight or being parsed then.
type checkpointEvent struct {
	logged, taken time.Time
	unfinished    int
}

// checkpointEvents reads the checkpoints from the event log, and the most
// virtualized URLs one of them held.
func checkpointEvents(t *testing.T, path string) (_ []checkpointEvent, virtual int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []checkpointEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var e struct {
			Time       time.Time `json:"time"`
			Msg        string    `json:"msg"`
			Taken      time.Time `json:"taken"`
			Unfinished int       `json:"unfinished"`
			Virtual    int64     `json:"virtual"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Msg == "checkpoint" {
			if e.Taken.IsZero() || e.Taken.After(e.Time) {
				t.Fatalf("checkpoint event without its cut before it: %s", sc.Bytes())
			}
			out = append(out, checkpointEvent{logged: e.Time, taken: e.Taken, unfinished: e.Unfinished})
			virtual = max(virtual, e.Virtual)
		}
	}
	return out, virtual
}

// TestCorruptCheckpointFallsBack crashes the crawler in the middle of a
// checkpoint (leaving a half-written folder), corrupts the newest complete
// checkpoint, and restarts: recovery must say the newest is unusable, go
// back to the previous one, and the crawl must still fetch everything.
func TestCorruptCheckpointFallsBack(t *testing.T) {
	r := startWeb(t, testweb.Config{Hosts: 12, HostsPerIP: 3, PagesPerHost: 25, Seed: 9, FirstIP: netip.MustParseAddr("127.64.0.1")})
	args := []string{"--host-delay", "40ms", "--ip-delay", "5ms", "--retry-delay", "100ms", "--fetch-timeout", "5s",
		"--checkpoint-every", "100ms"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, petrel, append([]string{"crawl", "--dir", r.dir, "--hosts", r.hosts, "--seeds", r.seeds,
		"--allow-private", "--system-dns=false", "--progress", "0"}, args...)...)
	cmd.Env = append(os.Environ(), "PETREL_CRASH_AT=checkpoint:5")
	if err := cmd.Run(); err == nil {
		t.Fatal("the crawl finished before its fifth checkpoint; make the web bigger")
	}
	cps, _ := filepath.Glob(filepath.Join(r.dir, "state", "checkpoints", "cp-*"))
	var complete []string
	halfWritten := false
	for _, c := range cps {
		if strings.HasSuffix(c, ".tmp") {
			halfWritten = true
		} else {
			complete = append(complete, c)
		}
	}
	if !halfWritten || len(complete) != 2 {
		t.Fatalf("checkpoints after the crash: %v (want two complete and one half-written)", cps)
	}
	newest := complete[len(complete)-1]
	todo := filepath.Join(newest, "todo")
	b, err := os.ReadFile(todo)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(todo, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.crawl(t, time.Minute, args...); err != nil {
		t.Fatalf("restart: %v\n%s", err, r.stderr.String())
	}
	out := r.stderr.String()
	if !strings.Contains(out, "half-written, ignored") || !strings.Contains(out, filepath.Base(newest)+" unusable") ||
		!strings.Contains(out, "recovered from "+filepath.Base(complete[0])) {
		t.Errorf("recovery did not fall back to the previous checkpoint with a clear message:\n%s", out)
	}
	seen := map[string]bool{}
	for _, h := range r.web.Hits() {
		seen[key(h.Host, h.Path)] = true
	}
	for _, u := range r.web.Expected() {
		if !seen[urlKey(t, u)] {
			t.Errorf("%s never fetched", u)
		}
	}
}
