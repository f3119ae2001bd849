package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestCorruptStateFileFallsBack: a state file of a crawl stopped cleanly
// found corrupt at the next start (state/counts, state/stats.json, a
// store file of the sieve) sends the start back to the newest valid
// checkpoint, which it says, and the crawl then fetches every page; with
// no checkpoint the start fails naming the file.
func TestCorruptStateFileFallsBack(t *testing.T) {
	corrupt := map[string]func(t *testing.T, state string){
		"counts": func(t *testing.T, state string) { flipByte(t, filepath.Join(state, "counts")) },
		"stats.json": func(t *testing.T, state string) {
			if err := os.WriteFile(filepath.Join(state, "stats.json"), []byte(`{"Fetched": 1`), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"sieve": func(t *testing.T, state string) {
			stores, _ := filepath.Glob(filepath.Join(state, "sieve", "*.sv"))
			if len(stores) == 0 {
				ents, _ := os.ReadDir(filepath.Join(state, "sieve"))
				t.Fatalf("no store file in the sieve: %v", ents)
			}
			flipByte(t, stores[0])
		},
	}
	i := 0
	for name, spoil := range corrupt {
		i++
		t.Run(name, func(t *testing.T) {
			web, root, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 30, Seed: 3,
				FirstIP: netip.MustParseAddr(fmt.Sprintf("127.61.%d.1", 23+i))})
			dir := filepath.Join(root, "crawl")
			cfg := testConfig(dir, hostsFile, seeds)
			cfg.Frontier.MaxURLs = 20
			openAndRun(t, cfg, io.Discard)
			state := filepath.Join(dir, "state")
			spoil(t, state)

			cfg.Frontier.MaxURLs = 0
			var progress bytes.Buffer
			openAndRun(t, cfg, &progress)
			if p := progress.String(); !strings.Contains(p, "state/"+name) || !strings.Contains(p, "back to the newest valid checkpoint") {
				t.Errorf("the start did not say state/%s is corrupt and it went back to a checkpoint:\n%s", name, p)
			}
			checkAllFetched(t, web)

			// The same with no checkpoint to go back to: a clear failure.
			cfg.Dir = filepath.Join(root, "again")
			cfg.Frontier.MaxURLs = 20
			openAndRun(t, cfg, io.Discard)
			spoil(t, filepath.Join(cfg.Dir, "state"))
			if err := os.RemoveAll(filepath.Join(cfg.Dir, "state", "checkpoints")); err != nil {
				t.Fatal(err)
			}
			cfg.Frontier.MaxURLs = 0
			_, err := Open(cfg, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "state/"+name) || !strings.Contains(err.Error(), "no checkpoint to go back to") {
				t.Errorf("Open with a corrupt state/%s and no checkpoint: %v", name, err)
			}
		})
	}
}

// openAndRun opens a crawl of cfg and runs it until it ends, within a
// minute, failing the test if either fails.
func openAndRun(t *testing.T, cfg Config, progress io.Writer) {
	t.Helper()
	a, err := Open(cfg, progress)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// flipByte inverts a byte in the middle of the file at path.
func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 {
		t.Fatalf("%s: %d bytes, %v", path, len(b), err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFailedRunRecovers: a run that fails (here on a ready queue found
// corrupt while popping, which opening does not read) keeps state/RUNNING
// and says what to do; the next start recovers from the newest valid
// checkpoint, and the crawl fetches every page.
func TestFailedRunRecovers(t *testing.T) {
	web, root, hostsFile, seeds := startTestWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 30, Seed: 3,
		FirstIP: netip.MustParseAddr("127.61.28.1")})
	dir := filepath.Join(root, "crawl")
	cfg := testConfig(dir, hostsFile, seeds)
	cfg.Frontier.MaxURLs = 20
	openAndRun(t, cfg, io.Discard)
	segs, _ := filepath.Glob(filepath.Join(dir, "state", "ready", "*.dq"))
	if len(segs) == 0 {
		t.Fatal("no segment in the ready queue")
	}
	flipByte(t, segs[len(segs)-1])

	cfg.Frontier.MaxURLs = 0
	var progress bytes.Buffer
	a, err := Open(cfg, &progress)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Run(ctx); err == nil {
		t.Fatal("a run on a corrupt ready queue did not fail: the test proves nothing")
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "RUNNING")); err != nil {
		t.Errorf("the failed run removed state/RUNNING: %v", err)
	}
	if !strings.Contains(progress.String(), "it recovers from the last checkpoint") {
		t.Errorf("the failed run did not say what to do:\n%s", progress.String())
	}
	progress.Reset()
	openAndRun(t, cfg, &progress)
	if !strings.Contains(progress.String(), "did not stop cleanly") {
		t.Errorf("the start after a failed run did not recover:\n%s", progress.String())
	}
	checkAllFetched(t, web)
}

// checkAllFetched fails the test for each page of web never requested.
func checkAllFetched(t *testing.T, web *testweb.Web) {
	t.Helper()
	hit := map[string]bool{}
	for _, h := range web.Hits() {
		hit[h.Host+" "+h.Path] = true
	}
	for _, raw := range web.Expected() {
		if u, err := urlx.Parse(raw); err != nil || !hit[u.Hostname()+" "+u.PathQuery] {
			t.Errorf("%s never fetched (%d requests)", raw, len(web.Hits()))
		}
	}
}
