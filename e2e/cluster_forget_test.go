package e2e

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestClusterForgetKilledLeaver sends SIGTERM to one agent of three
// mid-crawl and kills it (kill -9, by PETREL_CRASH_AT) in the middle of
// its leave, once one new owner has its release and before the other's
// is sent; it is never started again. The new owner without its release
// waits for it until `petrel cluster forget` names the agent: the forget
// says what it gives up, and the crawl then ends by itself with every
// page fetched once, politely, but for the URLs given up (those the
// leaver's outbox had not delivered).
func TestClusterForgetKilledLeaver(t *testing.T) {
	t.Parallel() // waits more than it computes: see the package doc
	const hostDelay, ipDelay = 120 * time.Millisecond, 60 * time.Millisecond
	web := startWeb(t, testweb.Config{Hosts: 24, HostsPerIP: 4, PagesPerHost: 20, Seed: 43,
		FirstIP: netip.MustParseAddr("127.61.21.1")})
	c := newClusterRun(t, web, "127.213.21.1", 3)
	c.moved = true
	// The leaver is declared dead --cluster-grace after its lease expired:
	// made small as in the death tests (deathFlags).
	flags := append(c.flags(hostDelay, ipDelay), "--cluster-wait", "3", "--leave-timeout", leaveTimeout.String(),
		"--fetch-timeout", "2s", "--max-delay", "500ms", "--crawl-delay-cap", "500ms")
	leaver := c.agents[1]
	leaver.env = []string{"PETREL_CRASH_AT=handoff-release:1"}
	for _, a := range c.agents {
		c.start(t, a, flags...)
	}
	leaver.waitFor(t, "view epoch ", 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	leaver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-leaver.done:
		leaver.done <- err // for wait below
		if err == nil || !strings.Contains(leaver.stderr.String(), "killing myself at handoff-release") {
			t.Fatalf("the leave was not killed at its first release: %v\n%s", err, leaver.stderr.String())
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatalf("%s did not reach its first release:\n%s", leaver.name, leaver.stderr.String())
	}
	var batches, records int
	c.givenUp, batches, records = outboxURLs(t, leaver.dir)
	// The new owner without its release waits: the crawl does not end.
	others := []*agentProc{c.agents[0], c.agents[2]}
	select {
	case err := <-others[0].done:
		t.Fatalf("%s exited (%v) while a release was awaited:\n%s", others[0].name, err, others[0].stderr.String())
	case err := <-others[1].done:
		t.Fatalf("%s exited (%v) while a release was awaited:\n%s", others[1].name, err, others[1].stderr.String())
	case <-time.After(2 * time.Second):
	}
	forgot := time.Now()
	out, err := exec.Command(petrel, "cluster", "forget", leaver.name, "--coordinators", c.coordinators(), "--cluster-name", "e2e", "--cluster-key-file", c.key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "forgot agent "+leaver.name) || !strings.Contains(string(out), "URLs queued") {
		t.Fatalf("forget: %v\n%s", err, out)
	}
	t.Logf("forget: %s", strings.TrimSpace(string(out)))
	// Its last status is from its leave, once its queues were moved out:
	// the URLs given up are those of its outbox's batches.
	namedURLs, named := -1, -1
	m := regexp.MustCompile(`given up what only it held: (\d+) URLs \(at its last status \([^)]*, during its leave\) it had 0 URLs queued and (\d+) URLs in (\d+) batches`).FindStringSubmatch(string(out))
	if m == nil || m[1] != m[2] {
		t.Errorf("the forget's figures are not from the leave after its queues were moved out, or its URLs given up are not its outbox's: %s", out)
	} else {
		namedURLs, _ = strconv.Atoi(m[1])
		named, _ = strconv.Atoi(m[3])
	}
	if lines, urls := forgetLogged(t, others, leaver.name); lines != 1 || urls != namedURLs {
		t.Errorf("the forget was logged in %d lines (want 1, the coordinator's), naming %d URLs (printed: %d)", lines, urls, namedURLs)
	}
	// After that status the leaver puts nothing in its outbox, and an
	// acknowledgement's frame is written only with a later put: every
	// batch it named is still on disk. The disk may hold more: batches
	// acknowledged before the status whose frames were never written.
	if named > batches || namedURLs > records {
		t.Errorf("the forget named %d URLs in %d batches; the leaver's outbox holds only %d in %d on disk", namedURLs, named, records, batches)
	}
	errs := c.wait(t, 60*time.Second)
	t.Logf("the crawl ended %s after the forget", time.Since(forgot).Round(time.Millisecond))
	// A batch delivered just before the kill may still be in the outbox
	// (its acknowledgement not yet written there): given up are those of
	// its URLs nobody fetched, and the forget must have named them.
	fetched := map[string]bool{}
	for _, h := range web.web.Hits() {
		fetched[key(h.Host, h.Path)] = true
	}
	expected := map[string]bool{}
	for _, u := range web.web.Expected() {
		expected[urlKey(t, u)] = true
	}
	lost := 0
	for k := range c.givenUp {
		if expected[k] && !fetched[k] {
			lost++
		}
	}
	t.Logf("of the %d URLs (%d records) in the leaver's outbox (%d batches), %d expected ones were never fetched; the forget named %d URLs in %d batches", len(c.givenUp), records, batches, lost, namedURLs, named)
	if lost > namedURLs {
		t.Errorf("the forget named %d URLs given up, and %d expected URLs of the leaver's outbox were never fetched", namedURLs, lost)
	}
	for _, a := range others {
		if errs[a.name] != nil {
			t.Errorf("agent %s: %v\n%s", a.name, errs[a.name], a.stderr.String())
		}
	}
	if v := loadView(t, others[0].dir); v.Has(leaver.name) || len(v.Absent) != 0 {
		t.Errorf("view after the forget: %s", v)
	}
	// The leaver never starts again to close its WARC file; its fetches
	// had ended and its checkpoint synced the file, so it ends at a
	// record's end: read as it is, it is part of the crawl's archive.
	open, _ := filepath.Glob(filepath.Join(leaver.dir, "warc", "*.warc.gz.open"))
	for _, f := range open {
		if err := os.Rename(f, strings.TrimSuffix(f, ".open")); err != nil {
			t.Fatal(err)
		}
	}
	// The moved hosts' robots.txt is fetched again by their new owners.
	c.judge(t, hostDelay, ipDelay, 2)
}

// forgetLogged returns the lines of the agents' event logs saying they
// forgot agent name, and the URLs the last one gave up.
func forgetLogged(t *testing.T, agents []*agentProc, name string) (lines, urls int) {
	t.Helper()
	for _, a := range agents {
		b, err := os.ReadFile(filepath.Join(a.dir, "logs", "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e struct {
				Msg  string `json:"msg"`
				URLs int    `json:"urls"`
			}
			if json.Unmarshal(line, &e) == nil && strings.Contains(e.Msg, "forgot agent "+name+":") {
				lines, urls = lines+1, e.URLs
			}
		}
	}
	return lines, urls
}

// outboxURLs returns the URL keys of the batches that the outbox of the
// agent whose crawl directory is dir holds unacknowledged, the batches
// and their records: what a forget of it gives up if it never starts
// again. Its frontier holds none: a leave moves every queued URL into the
// outbox before its releases.
func outboxURLs(t *testing.T, dir string) (urls map[string]bool, batches, records int) {
	t.Helper()
	o, err := cluster.OpenOutbox(filepath.Join(dir, "state", "cluster", "outbox"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	out := map[string]bool{}
	for _, dest := range o.Dests() {
		for _, e := range o.Pending(dest, 1<<20, nil) {
			batches++
			wire, err := o.Read(e)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cluster.DecodeBatch(wire)
			if err != nil {
				t.Fatal(err)
			}
			records += len(b.Records)
			for _, rec := range b.Records {
				// A record is its frontier key: metadata, then the URL.
				if i := bytes.Index(rec, []byte("http://")); i >= 0 {
					out[urlKey(t, string(rec[i:]))] = true
				}
			}
		}
	}
	if got := o.Records(); got != int64(records) {
		t.Errorf("the leaver's outbox counts %d records in its batches' headers; decoded they hold %d", got, records)
	}
	return out, batches, records
}
